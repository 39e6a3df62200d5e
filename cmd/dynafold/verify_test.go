package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/verify"
)

// migrated is the portfolio example in a fresh table, migrated cleanly.
func migrated(t *testing.T, d testenv.Driver) *target {
	t.Helper()
	tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
	r := tg.run(t, "", "table", "create")
	require.Equal(t, 0, r.Code, r.Output())
	r = tg.run(t, t.TempDir(), "migrate", "--progress", "none")
	require.Equal(t, 0, r.Code, r.Output())
	return tg
}

// compare runs verify or diff with --output json and returns the exit code
// and the report, checking that --report holds the same result.
func (tg *target) compare(t *testing.T, args ...string) (int, *verify.Report) {
	t.Helper()
	dir := t.TempDir()
	reportPath := filepath.Join(dir, "report.json")
	r := tg.run(t, dir, append(args, "--output", "json", "--report", reportPath)...)
	require.Contains(t, []int{0, 3}, r.Code, r.Output())
	var rep verify.Report
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Stdout)

	var wrapper struct {
		Command  string          `json:"command"`
		ExitCode int             `json:"exit_code"`
		Result   json.RawMessage `json:"result"`
	}
	data, err := os.ReadFile(reportPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &wrapper))
	require.Equal(t, r.Code, wrapper.ExitCode)
	require.JSONEq(t, r.Stdout, string(wrapper.Result))
	return r.Code, &rep
}

func key(pk, sk string) verify.Key { return verify.Key{PK: pk, SK: &sk} }

func keys(fs []verify.Finding) []verify.Key {
	out := []verify.Key{}
	for _, f := range fs {
		out = append(out, f.Key)
	}
	return out
}

func sav(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func TestVerifyAndDiffAfterCleanMigration(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			tg := migrated(t, d)

			code, rep := tg.compare(t, "verify")
			require.Equal(t, 0, code)
			require.True(t, rep.InSync)
			require.Equal(t, verify.Counts{RowsSeen: 10, RowsSampled: 10, Items: 10, Unchanged: 10}, rep.Totals)
			require.EqualValues(t, 2, rep.CollectionsSwept)

			code, rep = tg.compare(t, "diff")
			require.Equal(t, 0, code)
			require.Equal(t, verify.ModeDiff, rep.Command)
			require.Equal(t, verify.Counts{RowsSeen: 10, RowsSampled: 10, Items: 10, Unchanged: 10}, rep.Totals)
			for _, e := range rep.Entities {
				require.Equal(t, e.RowsSeen, e.Unchanged, e.Entity)
			}

			r := tg.run(t, "", "verify")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "verify: source and target agree: 10 items checked, none stale")
			require.NotContains(t, r.Stdout, "\x1b[", "no colour when stdout is not a terminal")
		})
	}
}

// tamperPortfolio damages the migrated table through the SDK: one item
// deleted, one attribute changed, an attribute added to a third item and a
// stale item put into a collection.
func tamperPortfolio(t *testing.T, tg *target) {
	t.Helper()
	ctx := context.Background()
	table := aws.String(tg.table)
	_, err := tg.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table,
		Key: map[string]types.AttributeValue{"PK": sav("1"), "SK": sav("DATABASE#jeffsitedb")}})
	require.NoError(t, err)
	_, err = tg.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: table,
		Key:                       map[string]types.AttributeValue{"PK": sav("2"), "SK": sav("PORTFOLIO")},
		UpdateExpression:          aws.String("SET PortfolioName = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": sav("Bob's Televisions")}})
	require.NoError(t, err)
	_, err = tg.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: table,
		Key:                       map[string]types.AttributeValue{"PK": sav("1"), "SK": sav("SERVER#jeffsiteserver")},
		UpdateExpression:          aws.String("SET Notes = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": sav("decommission soon")}})
	require.NoError(t, err)
	_, err = tg.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]types.AttributeValue{
		"PK": sav("1"), "SK": sav("SERVER#ghostserver"), "_type": sav("server"), "ServerID": sav("GhostServer"),
		"PortfolioID": &types.AttributeValueMemberN{Value: "1"}, "GSI1PK": sav("1#GhostServer"),
	}})
	require.NoError(t, err)
}

func TestVerifyDiffAndPruneAfterTampering(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			tg := migrated(t, d)
			tamperPortfolio(t, tg)

			code, rep := tg.compare(t, "verify")
			require.Equal(t, 3, code)
			require.False(t, rep.InSync)
			require.Equal(t, verify.Counts{RowsSeen: 10, RowsSampled: 10, Items: 10, Create: 1, Update: 2, Unchanged: 7, Stale: 1}, rep.Totals)

			require.Equal(t, []verify.Key{key("1", "DATABASE#jeffsitedb")}, keys(rep.Examples.Create))
			require.Equal(t, "database", rep.Examples.Create[0].Entity)

			require.Equal(t, []verify.Key{key("1", "SERVER#jeffsiteserver"), key("2", "PORTFOLIO")}, keys(rep.Examples.Update))
			notes := rep.Examples.Update[0].Changes
			require.Len(t, notes, 1)
			require.Equal(t, verify.Change{Attribute: "Notes", Op: verify.OpRemove, Old: &verify.Value{AV: sav("decommission soon")}}, notes[0])
			name := rep.Examples.Update[1].Changes
			require.Len(t, name, 1)
			require.Equal(t, verify.Change{Attribute: "PortfolioName", Op: verify.OpChange,
				Old: &verify.Value{AV: sav("Bob's Televisions")}, New: &verify.Value{AV: sav("Bob's TVs")}}, name[0])

			require.Equal(t, []verify.Key{key("1", "SERVER#ghostserver")}, keys(rep.Examples.Stale))
			require.Equal(t, "server", rep.Examples.Stale[0].Entity)

			code, rep = tg.compare(t, "diff")
			require.Equal(t, 3, code)
			require.Equal(t, verify.Counts{RowsSeen: 10, RowsSampled: 10, Items: 10, Create: 1, Update: 2, Unchanged: 7, Stale: 1}, rep.Totals)

			// The same diff as migrate --dry-run, in text and Markdown.
			r := tg.run(t, "", "migrate", "--dry-run")
			require.Equal(t, 3, r.Code, r.Output())
			require.Contains(t, r.Stdout, "diff: migrate would change 4 items: 1 to create, 2 to update, 1 stale")
			require.Contains(t, r.Stdout, `~ PortfolioName  "Bob's Televisions" → "Bob's TVs"`)
			r = tg.run(t, "", "diff", "--output", "markdown")
			require.Equal(t, 3, r.Code, r.Output())
			require.Contains(t, r.Stdout, "**migrate would change 4 items:**")
			require.Contains(t, r.Stdout, "```diff\n- PK=\"1\": 1 stale item (server 1)\n-     server  SK=\"SERVER#ghostserver\"\n")

			// migrate --prune writes the missing and changed items back and
			// deletes the stale one.
			dir := t.TempDir()
			r = tg.run(t, dir, "migrate", "--progress", "none", "--prune")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "prune: deleted 1 stale item: the whole table swept, 11 items scanned")
			require.Equal(t, portfolioItems, testenv.ScanItems(t, tg.client, tg.table))

			code, rep = tg.compare(t, "verify")
			require.Equal(t, 0, code)
			require.Equal(t, verify.Counts{RowsSeen: 10, RowsSampled: 10, Items: 10, Unchanged: 10}, rep.Totals)
		})
	}
}

func TestDiffShowsSourceChangesBeforeMigrate(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			tg := migrated(t, d)
			q := func(s string) string {
				if d.Name == "mysql" {
					return strings.ReplaceAll(s, `"`, "`")
				}
				return s
			}
			testenv.ExecSQL(t, d.Name, tg.dsn, q(`
				UPDATE portfolios SET name = 'Jeff''s Pipes' WHERE id = 1;
				INSERT INTO servers (id, portfolio_id) VALUES ('BobBackupServer', 2);
				DELETE FROM "databases" WHERE id = 'JeffInternalDB';`))

			code, rep := tg.compare(t, "diff")
			require.Equal(t, 3, code)
			require.Equal(t, verify.Counts{RowsSeen: 10, RowsSampled: 10, Items: 10, Create: 1, Update: 1, Unchanged: 8, Stale: 1}, rep.Totals)
			require.Equal(t, []verify.Key{key("2", "SERVER#bobbackupserver")}, keys(rep.Examples.Create))
			require.Equal(t, "server", rep.Examples.Create[0].Entity)
			require.Equal(t, []verify.Key{key("1", "PORTFOLIO")}, keys(rep.Examples.Update))
			require.Equal(t, []verify.Change{{Attribute: "PortfolioName", Op: verify.OpChange,
				Old: &verify.Value{AV: sav("Jeff's Plumbing")}, New: &verify.Value{AV: sav("Jeff's Pipes")}}}, rep.Examples.Update[0].Changes)
			require.Equal(t, []verify.Key{key("1", "DATABASE#jeffinternaldb")}, keys(rep.Examples.Stale))
			require.Equal(t, "database", rep.Examples.Stale[0].Entity)

			// A diff writes nothing: the table and the working directory are
			// as they were.
			before := testenv.ScanItems(t, tg.client, tg.table)
			dir := t.TempDir()
			r := tg.run(t, dir, "migrate", "--dry-run", "--progress", "none")
			require.Equal(t, 3, r.Code, r.Output())
			require.Equal(t, before, testenv.ScanItems(t, tg.client, tg.table))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, entries, "no checkpoint")

			r = tg.run(t, t.TempDir(), "migrate", "--progress", "none", "--prune")
			require.Equal(t, 0, r.Code, r.Output())
			code, rep = tg.compare(t, "diff")
			require.Equal(t, 0, code)
			require.Equal(t, verify.Counts{RowsSeen: 10, RowsSampled: 10, Items: 10, Unchanged: 10}, rep.Totals)
		})
	}
}

func TestVerifySampleIsRepeatable(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			tg := migrated(t, d)
			code, a := tg.compare(t, "verify", "--sample", "0.5", "--seed", "7")
			require.Equal(t, 0, code)
			code, b := tg.compare(t, "verify", "--sample", "0.5", "--seed", "7")
			require.Equal(t, 0, code)
			require.Equal(t, a.Entities, b.Entities)
			require.EqualValues(t, 10, a.Totals.RowsSeen)
			require.Less(t, a.Totals.RowsSampled, int64(10))
			require.Equal(t, a.Totals.RowsSampled, a.Totals.Items)
			require.Equal(t, &verify.Sample{Fraction: 0.5, Seed: 7}, a.Sample)

			r := tg.run(t, "", "verify", "--sample", "0")
			require.Equal(t, 2, r.Code, r.Output())
		})
	}
}

func TestMigrateDryRunOnEmptyTable(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0]
	tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
	r := tg.run(t, "", "table", "create")
	require.Equal(t, 0, r.Code, r.Output())
	dir := t.TempDir()
	r = tg.run(t, dir, "migrate", "--dry-run", "--output", "json")
	require.Equal(t, 3, r.Code, r.Output())
	var rep verify.Report
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep))
	require.EqualValues(t, 10, rep.Totals.Create)
	require.Len(t, rep.Examples.Create, 10)
	require.Empty(t, testenv.ScanItems(t, tg.client, tg.table))
	_, err := os.Stat(filepath.Join(dir, ".dynafold"))
	require.True(t, os.IsNotExist(err), "a dry run creates no checkpoint")

	args := append([]string{"diff"}, tg.flags...)
	r = clitest.Run(t, "", nil, append(args, "--table", "dft_no_such_table")...)
	require.Equal(t, 1, r.Code, r.Output())
	require.Contains(t, r.Stderr, "does not exist")
}
