package mapping

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// A join's on: may be written either way round when only one reading
// names existing columns: {server_id: id} pairs databases.server_id with
// servers.id exactly as the canonical {id: server_id} does, and the plan
// builds the same items. An earlier alias may stand on either side too.
func TestJoinOnEitherDirection(t *testing.T) {
	canonical, err := compileString(t, portfolioMapping, portfolioSchema())
	require.NoError(t, err)
	row := value.Row{value.StringValue("JeffSiteDB"), value.IntValue(1), value.StringValue("JeffSiteServer")}
	want, err := canonical.Entity("database").Build(row, nil)
	require.NoError(t, err)

	for _, tc := range []struct{ name, on string }{
		{"canonical", "{id: server_id}"},
		{"reversed", "{server_id: id}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := strings.Replace(portfolioMapping, "on: {id: server_id}", "on: "+tc.on, 1)
			p, err := compileString(t, m, portfolioSchema())
			require.NoError(t, err)
			db := p.Entity("database")
			require.Equal(t, canonical.Entity("database").Query.Joins, db.Query.Joins)
			require.Equal(t, canonical.Entity("database").ColumnNames(), db.ColumnNames())
			got, err := db.Build(row, nil)
			require.NoError(t, err)
			require.Equal(t, want[0].Attrs, got[0].Attrs)
			require.Equal(t, want[0].Key, got[0].Key)
		})
	}

	// Through an earlier alias: a database's portfolio, reached through its
	// server, either way round.
	withPortfolio := strings.Replace(portfolioMapping, "      server: {from: servers, on: {id: server_id}}\n",
		"      server: {from: servers, on: {id: server_id}}\n      portfolio: {from: portfolios, on: ON}\n", 1)
	var joins [][]source.Join
	for _, on := range []string{"{id: server.portfolio_id}", "{server.portfolio_id: id}"} {
		p, err := compileString(t, strings.Replace(withPortfolio, "ON", on, 1), portfolioSchema())
		require.NoError(t, err, on)
		joins = append(joins, p.Entity("database").Query.Joins)
	}
	require.Equal(t, source.JoinOn{Column: "id", RefAlias: "server", RefColumn: "portfolio_id"}, joins[0][1].On[0])
	require.Equal(t, joins[0], joins[1])
}

// When both readings name existing columns (a self-join: each column is
// on both sides), on: keeps its canonical meaning, {joined_column:
// column}: {employee_id: reports_to} joins the manager, never the
// reports. A pair that names no existing column either way is reported
// in the canonical reading, at the pair's key path.
func TestJoinOnAmbiguousKeepsCanonicalMeaning(t *testing.T) {
	employees := &source.Table{Ref: source.TableRef{Name: "employees"}, PrimaryKey: []string{"employee_id"}, Unique: [][]string{{"employee_id"}},
		Columns: []source.Column{{Name: "employee_id", Kind: value.Int}, {Name: "reports_to", Kind: value.Int}, {Name: "last_name", Kind: value.String}}}
	schema := &Schema{Tables: map[source.TableRef]*source.Table{{Name: "employees"}: employees}}
	const m = `
version: 1
source: {driver: postgres}
target: {table: shop, key: {pk: PK, sk: SK}}
entities:
  employee:
    from: employees
    join:
      manager: {from: employees, on: ON}
    key: {pk: "EMPLOYEE#${employee_id}", sk: "EMPLOYEE#${employee_id}"}
    attributes: {Manager: manager.last_name}
`
	p, err := compileString(t, strings.Replace(m, "ON", "{employee_id: reports_to}", 1), schema)
	require.NoError(t, err)
	require.Equal(t, []source.JoinOn{{Column: "employee_id", RefColumn: "reports_to"}}, p.Entity("employee").Query.Joins[0].On,
		"manager.employee_id = employees.reports_to")

	// The other reading is not unique (a manager has several reports), and
	// is only taken when written so: it is refused as such.
	_, err = compileString(t, strings.Replace(m, "ON", "{reports_to: employee_id}", 1), schema)
	require.EqualError(t, err, "entities.employee.join.manager.on: joining employees on (reports_to) could match several rows per employee row; join on its primary key or a unique key")

	_, err = compileString(t, strings.Replace(m, "ON", "{employee_id: boss_id}", 1), schema)
	require.EqualError(t, err, `entities.employee.join.manager.on.employee_id: unknown column "boss_id" in table employees`)
	_, err = compileString(t, strings.Replace(m, "ON", "{boss_id: employee_id}", 1), schema)
	require.EqualError(t, err, `entities.employee.join.manager.on.boss_id: unknown column "boss_id" in table employees`)
}
