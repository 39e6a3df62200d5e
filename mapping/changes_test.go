package mapping

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// changesSchema is the portfolio source with change columns, a soft-delete
// column and a nested contacts table.
func changesSchema() *Schema {
	s := portfolioSchema()
	ts := source.Column{Name: "updated_at", Kind: value.Timestamp}
	for _, t := range s.Tables {
		t.Columns = append(t.Columns, ts)
	}
	db := s.Tables[source.TableRef{Name: "databases"}]
	db.Columns = append(db.Columns, source.Column{Name: "deleted_at", Kind: value.Timestamp}, source.Column{Name: "engine", Kind: value.String})
	s.Tables[source.TableRef{Name: "contacts"}] = &source.Table{
		Ref: source.TableRef{Name: "contacts"},
		Columns: []source.Column{{Name: "portfolio_id", Kind: value.Int}, {Name: "email", Kind: value.String}, ts,
			{Name: "deleted_at", Kind: value.Timestamp}},
		PrimaryKey: []string{"portfolio_id", "email"},
		Unique:     [][]string{{"portfolio_id", "email"}},
	}
	return s
}

// withChanges returns the portfolio mapping with a changes: block and a
// nest of contacts under portfolio.
func withChanges(changes string) string {
	m := strings.Replace(portfolioMapping, `      PortfolioName: name
`, `      PortfolioName: name
    nest:
      Contacts: {from: contacts, on: {portfolio_id: id}, order_by: [email], attributes: {Email: email}}
`, 1)
	return m + "changes:\n" + changes
}

// testDialect quotes with double quotes and numbers placeholders.
type testDialect struct{}

func (testDialect) Quote(s string) string               { return `"` + s + `"` }
func (testDialect) Placeholder(n int) string            { return fmt.Sprintf("$%d", n) }
func (testDialect) RowCompare() bool                    { return true }
func (testDialect) CastColumn(expr, cast string) string { return expr }

func TestChangesDependenciesAndNarrowing(t *testing.T) {
	p, err := compileString(t, withChanges(`
  portfolios: {column: updated_at}
  servers:    {column: updated_at}
  databases:  {column: updated_at, deleted: deleted_at}
  contacts:   {column: updated_at, deleted: deleted_at}
`), changesSchema())
	require.NoError(t, err)

	db := p.Entity("database")
	deps := db.Dependencies()
	require.Len(t, deps, 2)
	require.Equal(t, DepOwn, deps[0].Kind)
	require.Equal(t, "deleted_at", deps[0].Changes.Deleted)
	require.Equal(t, DepJoin, deps[1].Kind)
	require.Equal(t, "server", deps[1].Alias)
	ok, _ := db.Incremental()
	require.True(t, ok)
	pf := p.Entity("portfolio")
	require.Equal(t, DepNest, pf.Dependencies()[1].Kind)

	conv := func(v value.Value) any { return v.Text() }
	sql := func(q *source.Query) string { return source.PageSQL(testDialect{}, q, source.Full, nil, 10, conv).SQL }
	// Soft-deleted rows make no item, in every run.
	require.Contains(t, sql(db.Query), `"src"."deleted_at" IS NULL`)
	require.Contains(t, sql(pf.Nests()[0].Query), `"_child"."deleted_at" IS NULL`)

	since := Since{{Name: "portfolios"}: "2025-01-01", {Name: "servers"}: "2025-01-02", {Name: "databases"}: "2025-01-03", {Name: "contacts"}: "2025-01-04"}
	narrowed, full := p.Changed(since)
	require.Empty(t, full)
	st := source.PageSQL(testDialect{}, narrowed.Entity("database").Query, source.Full, nil, 10, conv)
	require.Contains(t, st.SQL, `("src"."deleted_at" IS NULL) AND ("src"."updated_at" > $1 OR "server"."updated_at" > $2)`)
	require.Equal(t, []any{"2025-01-03", "2025-01-02"}, st.Args[:2])
	np := narrowed.Entity("portfolio")
	require.Contains(t, sql(np.Query), `"src"."updated_at" > $1 OR EXISTS (SELECT 1 FROM "contacts" AS dynafold_changed WHERE "dynafold_changed"."portfolio_id" = "src"."id" AND "dynafold_changed"."updated_at" > $2)`)
	// The nested query is narrowed the same way, so that it reads the
	// children of exactly the parents read.
	require.Contains(t, sql(np.Nests()[0].Query), `EXISTS (SELECT 1 FROM "contacts"`)
	// The original plan is untouched.
	require.NotContains(t, sql(p.Entity("database").Query), "updated_at")

	sd := p.SoftDeleted(since)
	require.Len(t, sd.Entities, 1)
	require.Contains(t, sql(sd.Entities[0].Query), `"src"."deleted_at" IS NOT NULL AND "src"."updated_at" > $1`)
	require.NotContains(t, sql(sd.Entities[0].Query), `IS NULL)`)
}

func TestChangesNotServable(t *testing.T) {
	p, err := compileString(t, withChanges(`
  databases: {column: updated_at}
  portfolios: {column: updated_at}
`), changesSchema())
	require.NoError(t, err)
	ok, why := p.Entity("database").Incremental()
	require.False(t, ok)
	require.Equal(t, "joined table servers (join server) has no change column in changes:", why)
	ok, why = p.Entity("portfolio").Incremental()
	require.False(t, ok)
	require.Equal(t, "nested table contacts (nest Contacts) has no change column in changes:", why)
	_, full := p.Changed(Since{{Name: "databases"}: "x", {Name: "portfolios"}: "y"})
	require.Equal(t, []string{"portfolio", "server", "database"}, full)
}

func TestChangesErrors(t *testing.T) {
	for _, tc := range []struct{ changes, want string }{
		{"  servers: {column: updatd_at}\n", `changes.servers.column: unknown column "updatd_at" in table servers`},
		{"  servers: {column: portfolio_id}\n", `changes.servers.column: column "portfolio_id" of table servers is int, not a timestamp`},
		{"  databases: {column: updated_at, deleted: gone}\n", `changes.databases.deleted: unknown column "gone" in table databases`},
		{"  databases: {column: updated_at, deleted: updated_at}\n", `changes.databases.deleted: the soft-delete column must differ`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := compileString(t, withChanges(tc.changes), changesSchema())
			require.ErrorContains(t, err, tc.want)
		})
	}
}
