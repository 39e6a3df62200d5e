package verify

import (
	"bytes"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/golden"
)

func sp(v string) *string { return &v }

// fixtureReport is the portfolio example after the tampering:
// one database deleted, a portfolio renamed, an extra attribute on a server
// and a stale server, plus a row that cannot become an item.
func fixtureReport(mode Mode) *Report {
	r := &Report{
		SchemaVersion: SchemaVersion,
		Command:       mode,
		Table:         "portfolios",
		KeySchema:     KeySchema{PK: KeyAttribute{Name: "PK", Type: "S"}, SK: &KeyAttribute{Name: "SK", Type: "S"}, TypeAttribute: "_type"},
		Source:        "postgres://dynafold@127.0.0.1:55432/portfolios",
		Snapshot:      "one exported snapshot shared by every reader",
		Entities: []EntityCounts{
			{Entity: "portfolio", Counts: Counts{RowsSeen: 2, RowsSampled: 2, Items: 2, Update: 1, Unchanged: 1}},
			{Entity: "server", Counts: Counts{RowsSeen: 4, RowsSampled: 4, Items: 4, Update: 1, Unchanged: 3, Stale: 1}},
			{Entity: "database", Counts: Counts{RowsSeen: 5, RowsSampled: 5, RowErrors: 1, Items: 4, Create: 1, Unchanged: 3}},
		},
		Sweep:            SweepTable,
		CollectionsSwept: 2,
		KeysScanned:      12,
		OtherItems:       1,
		SweepReadUnits:   3,
		StaleCollections: 1,
		StaleByCollection: []StaleCollection{{PK: "1", Items: 1, Entities: []EntityStale{{Entity: "server", Items: 1}},
			Examples: []StaleKey{{Entity: "server", SK: sp("SERVER#ghost")}}}},
		Examples: Examples{
			Create: []Finding{{Entity: "database", Type: "database", Key: Key{PK: "1", SK: sp("DATABASE#jeffsitedb")}, Changes: []Change{
				{Attribute: "DatabaseID", Op: OpAdd, New: valueOf(s("JeffSiteDB"))},
				{Attribute: "GSI1PK", Op: OpAdd, New: valueOf(s("1#JeffSiteServer"))},
				{Attribute: "PK", Op: OpAdd, New: valueOf(s("1"))},
				{Attribute: "PortfolioID", Op: OpAdd, New: valueOf(n("1"))},
				{Attribute: "SK", Op: OpAdd, New: valueOf(s("DATABASE#jeffsitedb"))},
				{Attribute: "ServerID", Op: OpAdd, New: valueOf(s("JeffSiteServer"))},
				{Attribute: "_type", Op: OpAdd, New: valueOf(s("database"))},
			}}},
			Update: []Finding{
				{Entity: "server", Type: "server", Key: Key{PK: "1", SK: sp("SERVER#jeffsiteserver")}, Changes: []Change{
					{Attribute: "Notes", Op: OpRemove, Old: valueOf(m("owner", s("jeff"), "tags", &types.AttributeValueMemberSS{Value: []string{"web", "prod"}}))},
				}},
				{Entity: "portfolio", Type: "portfolio", Key: Key{PK: "2", SK: sp("PORTFOLIO")}, Changes: []Change{
					{Attribute: "PortfolioName", Op: OpChange, Old: valueOf(s("Bob's Televisions | `TV`")), New: valueOf(s("Bob's TVs"))},
				}},
			},
			Stale: []Finding{{Entity: "server", Type: "server", Key: Key{PK: "1", SK: sp("SERVER#ghost")}, Changes: []Change{
				{Attribute: "PK", Op: OpRemove, Old: valueOf(s("1"))},
				{Attribute: "SK", Op: OpRemove, Old: valueOf(s("SERVER#ghost"))},
				{Attribute: "ServerID", Op: OpRemove, Old: valueOf(s("ghost"))},
				{Attribute: "_type", Op: OpRemove, Old: valueOf(s("server"))},
			}}},
		},
		RowErrors: []RowError{{Entity: "database", SourceKey: `id="OrphanDB"`, Attribute: "PK", Reason: `is NULL: template "${server.portfolio_id}" references a NULL column`}},
		Seconds:   0.25,
	}
	for _, e := range r.Entities {
		r.Totals.add(e.Counts)
	}
	r.InSync = r.Totals.Differences() == 0
	return r
}

// inSyncReport is the same table after repair, checked on a sample.
func inSyncReport() *Report {
	r := fixtureReport(ModeVerify)
	r.Entities = []EntityCounts{
		{Entity: "portfolio", Counts: Counts{RowsSeen: 2, RowsSampled: 1, Items: 1, Unchanged: 1}},
		{Entity: "server", Counts: Counts{RowsSeen: 4, RowsSampled: 2, Items: 2, Unchanged: 2}},
		{Entity: "database", Counts: Counts{RowsSeen: 4, RowsSampled: 3, Items: 3, Unchanged: 3}},
	}
	r.Totals = Counts{}
	for _, e := range r.Entities {
		r.Totals.add(e.Counts)
	}
	r.Sample = &Sample{Fraction: 0.5, Seed: 7}
	// A collections sweep: the verdict says what it did not check.
	r.Sweep, r.KeysScanned, r.OtherItems, r.SweepReadUnits = SweepCollections, 0, 0, 2
	r.StaleCollections, r.StaleByCollection = 0, []StaleCollection{}
	r.Examples = Examples{Create: []Finding{}, Update: []Finding{}, Stale: []Finding{}}
	r.RowErrors = []RowError{}
	r.InSync = true
	return r
}

func TestRenderGolden(t *testing.T) {
	reports := map[string]*Report{
		"diff":    fixtureReport(ModeDiff),
		"verify":  fixtureReport(ModeVerify),
		"in-sync": inSyncReport(),
	}
	more := fixtureReport(ModeDiff)
	more.Entities[1].Update, more.Entities[1].Unchanged = 12, 0 // more updates than examples
	more.Totals = Counts{}
	for _, e := range more.Entities {
		more.Totals.add(e.Counts)
	}
	more.DuplicateKeys = 2
	// A portfolio deleted at the source with its servers and databases is
	// one collection of stale items; more collections than are listed.
	more.Entities[0].Stale, more.Entities[1].Stale, more.Entities[2].Stale = 1, 3, 5
	more.Totals = Counts{}
	for _, e := range more.Entities {
		more.Totals.add(e.Counts)
	}
	more.StaleCollections = 4
	more.StaleByCollection = []StaleCollection{
		{PK: "1", Items: 1, Entities: []EntityStale{{Entity: "server", Items: 1}}, Examples: []StaleKey{{Entity: "server", SK: sp("SERVER#ghost")}}},
		{PK: "2", Items: 7, Entities: []EntityStale{{Entity: "portfolio", Items: 1}, {Entity: "server", Items: 2}, {Entity: "database", Items: 4}},
			Examples: []StaleKey{{Entity: "database", SK: sp("DATABASE#a")}, {Entity: "database", SK: sp("DATABASE#b")},
				{Entity: "database", SK: sp("DATABASE#c")}, {Entity: "database", SK: sp("DATABASE#d")}, {Entity: "portfolio", SK: sp("PORTFOLIO")}}},
	}
	more.KeysSpilled, more.OutsideFilter = 5000, 2
	reports["truncated"] = more
	prune := fixtureReport(ModePrune)
	prune.Examples.Create, prune.Examples.Update = nil, nil
	for i := range prune.Entities {
		c := &prune.Entities[i].Counts
		c.Items, c.Create, c.Update, c.Unchanged = 0, 0, 0, 0
	}
	prune.Totals = Counts{}
	for _, e := range prune.Entities {
		prune.Totals.add(e.Counts)
	}
	prune.Deleted, prune.InSync = 1, true
	reports["prune"] = prune

	for name, r := range reports {
		t.Run(name, func(t *testing.T) {
			var text, colour, md, js bytes.Buffer
			require.NoError(t, r.WriteText(&text, false))
			require.NoError(t, r.WriteText(&colour, true))
			require.NoError(t, r.WriteMarkdown(&md))
			require.NoError(t, r.WriteJSON(&js))
			golden.Check(t, name+".txt", text.String())
			golden.Check(t, name+".color.txt", colour.String())
			golden.Check(t, name+".md", md.String())
			golden.Check(t, name+".json", js.String())
		})
	}
}
