package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/verify"
)

// deletePortfolio2 deletes portfolio 2 at the source with its servers and
// their databases: no row produces collection "2" any more.
func deletePortfolio2(t *testing.T, d testenv.Driver, tg *target) {
	t.Helper()
	sql := `DELETE FROM "databases" WHERE server_id IN (SELECT id FROM servers WHERE portfolio_id = 2);
		DELETE FROM servers WHERE portfolio_id = 2;
		DELETE FROM portfolios WHERE id = 2;`
	if d.Name == "mysql" {
		sql = strings.ReplaceAll(sql, `"`, "`")
	}
	testenv.ExecSQL(t, d.Name, tg.dsn, sql)
}

// collection2 is what a sweep of the whole table finds once portfolio 2 is
// gone: one collection of five stale items.
var collection2 = verify.StaleCollection{PK: "2", Items: 5,
	Entities: []verify.EntityStale{{Entity: "portfolio", Items: 1}, {Entity: "server", Items: 2}, {Entity: "database", Items: 2}},
	Examples: []verify.StaleKey{
		{Entity: "database", SK: aws.String("DATABASE#bobinternaldb")}, {Entity: "database", SK: aws.String("DATABASE#bobsitedb")},
		{Entity: "portfolio", SK: aws.String("PORTFOLIO")},
		{Entity: "server", SK: aws.String("SERVER#bobinternalserver")}, {Entity: "server", SK: aws.String("SERVER#bobsiteserver")},
	}}

// pruneReport runs migrate --prune with args and returns its prune report.
func (tg *target) pruneReport(t *testing.T, args ...string) *verify.Report {
	t.Helper()
	r := tg.run(t, t.TempDir(), append([]string{"migrate", "--progress", "none", "--prune", "--output", "json"}, args...)...)
	require.Equal(t, 0, r.Code, r.Output())
	var out struct {
		Prune *verify.Report `json:"prune"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &out), r.Stdout)
	require.NotNil(t, out.Prune, r.Stdout)
	return out.Prune
}

// A portfolio deleted at the source with its servers and databases leaves
// a collection no row produces. The table sweep (the default) finds it as
// one collection of stale items, migrate --prune deletes it, and only then
// does verify exit 0. The collections sweep cannot see it, and its verdict
// says what it did not check.
func TestSweepFindsACollectionDeletedAtTheSource(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			tg := migrated(t, d)
			deletePortfolio2(t, d, tg)

			code, rep := tg.compare(t, "diff")
			require.Equal(t, 3, code)
			require.Equal(t, verify.SweepTable, rep.Sweep)
			require.Equal(t, verify.Counts{RowsSeen: 5, RowsSampled: 5, Items: 5, Unchanged: 5, Stale: 5}, rep.Totals)
			require.EqualValues(t, 1, rep.StaleCollections)
			require.Equal(t, []verify.StaleCollection{collection2}, rep.StaleByCollection)
			require.EqualValues(t, 10, rep.KeysScanned)

			r := tg.run(t, "", "diff")
			require.Equal(t, 3, r.Code, r.Output())
			require.Contains(t, r.Stdout, "5 stale, in 1 collection\n  PK=\"2\": 5 stale items (portfolio 1, server 2, database 2)\n")
			require.Contains(t, r.Stdout, "sweep: the whole table, 10 items scanned")

			// verify --sweep collections exits 0, as it always did, but no
			// longer says "none stale".
			r = tg.run(t, "", "verify", "--sweep", "collections")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "verify: source and target agree: 5 items checked; stale items checked in the 1 collection the rows produce; collections no row produces were not checked\n")
			require.NotContains(t, r.Stdout, "none stale")
			r = tg.run(t, "", "verify", "--sweep", "collections", "--output", "markdown")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "collections no row produces were not checked")
			code, rep = tg.compare(t, "verify", "--sweep", "collections")
			require.Equal(t, 0, code)
			require.Equal(t, verify.SweepCollections, rep.Sweep)
			require.EqualValues(t, 1, rep.CollectionsSwept)

			code, _ = tg.compare(t, "verify")
			require.Equal(t, 3, code, "the default sweep sees the collection")

			// migrate --prune --sweep collections deletes nothing there.
			pruned := tg.pruneReport(t, "--sweep", "collections")
			require.Equal(t, verify.SweepCollections, pruned.Sweep)
			require.Zero(t, pruned.Deleted)
			require.Len(t, testenv.ScanItems(t, tg.client, tg.table), 10)

			pruned = tg.pruneReport(t)
			require.Equal(t, verify.SweepTable, pruned.Sweep)
			require.EqualValues(t, 5, pruned.Deleted)
			require.Equal(t, []verify.StaleCollection{collection2}, pruned.StaleByCollection)
			var portfolio1 []string
			for _, it := range portfolioItems {
				if strings.Contains(it, `"PK":"1"`) {
					portfolio1 = append(portfolio1, it)
				}
			}
			require.Equal(t, portfolio1, testenv.ScanItems(t, tg.client, tg.table))

			r = tg.run(t, "", "verify")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "verify: source and target agree: 5 items checked, none stale\n")
		})
	}
}

// Items the mapping does not recognise (another item type, no type
// attribute at all) are never deleted by prune, wherever they are, and
// the report counts them.
func TestPruneLeavesItemsThatAreNotTheMappings(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			tg := migrated(t, d)
			put := func(item map[string]types.AttributeValue) {
				_, err := tg.client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tg.table), Item: item})
				require.NoError(t, err)
			}
			put(map[string]types.AttributeValue{"PK": sav("1"), "SK": sav("INVOICE#1"), "_type": sav("invoice")})
			put(map[string]types.AttributeValue{"PK": sav("7"), "SK": sav("NOTE#1"), "Text": sav("no type attribute")})
			put(map[string]types.AttributeValue{"PK": sav("7"), "SK": sav("SERVER#ghost"), "_type": sav("server")})
			before := testenv.ScanItems(t, tg.client, tg.table)

			pruned := tg.pruneReport(t)
			require.EqualValues(t, 1, pruned.Deleted, "the ghost server only")
			require.EqualValues(t, 2, pruned.OtherItems)
			after := testenv.ScanItems(t, tg.client, tg.table)
			require.Len(t, after, len(before)-1)
			require.Len(t, after, len(portfolioItems)+2)

			code, rep := tg.compare(t, "verify")
			require.Equal(t, 0, code)
			require.EqualValues(t, 2, rep.OtherItems)
			r := tg.run(t, "", "verify")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "; 2 items not the mapping's, left alone;")
		})
	}
}

// With a memory budget far below the table's keys, the sweep spills sorted
// runs to --temp-dir and finds the same as in memory.
func TestSweepSpillsPastItsMemoryBudget(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			tg := migrated(t, d)
			deletePortfolio2(t, d, tg)

			code, inMemory := tg.compare(t, "diff")
			require.Equal(t, 3, code)
			require.Zero(t, inMemory.KeysSpilled)

			tmp := t.TempDir()
			code, spilled := tg.compare(t, "diff", "--spill-bytes", "64", "--temp-dir", tmp)
			require.Equal(t, 3, code)
			require.Positive(t, spilled.KeysSpilled)
			left, err := os.ReadDir(tmp)
			require.NoError(t, err)
			require.Empty(t, left, "the sorted runs are removed")

			inMemory.Seconds, spilled.Seconds, spilled.KeysSpilled = 0, 0, 0
			require.Equal(t, inMemory, spilled)
			require.Equal(t, []verify.StaleCollection{collection2}, spilled.StaleByCollection)

			r := tg.run(t, "", "diff", "--spill-bytes", "64", "--temp-dir", tmp)
			require.Equal(t, 3, r.Code, r.Output())
			require.Contains(t, r.Stdout, "keys spilled to temporary files")
		})
	}
}

// --sweep takes table or collections, applies to --prune and --dry-run,
// and not to --incremental, whose key sweep has its own ways.
func TestSweepFlag(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0]
	tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "--sweep", "everything"}, `--sweep must be table or collections, not "everything"`},
		{[]string{"migrate", "--sweep", "collections"}, "--sweep applies only with --prune or --dry-run"},
		{[]string{"migrate", "--incremental", "--sweep", "table"}, "--sweep does not apply with --incremental"},
		{[]string{"diff", "--incremental", "--sweep", "collections"}, "--sweep does not apply with --incremental"},
	} {
		r := tg.run(t, t.TempDir(), tt.args...)
		require.Equal(t, 2, r.Code, r.Output())
		require.Contains(t, r.Stderr, tt.want)
	}
}
