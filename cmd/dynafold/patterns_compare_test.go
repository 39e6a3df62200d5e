package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// sampledPortfolioPatterns are access patterns over configs/portfolios.yaml's
// entities whose parameters are sampled from the source.
const sampledPortfolioPatterns = `access_patterns:
  - name: a portfolio with everything
    query: {pk: "${portfolio}"}
    params: {sql: "SELECT id AS portfolio FROM portfolios"}
    sql:
      postgres: |
        SELECT 'portfolio' AS type, id AS portfolio_id, NULL AS server_id, NULL AS database_id FROM portfolios WHERE id = :portfolio
        UNION ALL SELECT 'server', portfolio_id, id, NULL FROM servers WHERE portfolio_id = :portfolio
        UNION ALL SELECT 'database', s.portfolio_id, d.server_id, d.id FROM databases d JOIN servers s ON s.id = d.server_id WHERE s.portfolio_id = :portfolio
      mysql: |
        SELECT 'portfolio' AS type, id AS portfolio_id, NULL AS server_id, NULL AS database_id FROM portfolios WHERE id = :portfolio
        UNION ALL SELECT 'server', portfolio_id, id, NULL FROM servers WHERE portfolio_id = :portfolio
        UNION ALL SELECT 'database', s.portfolio_id, d.server_id, d.id FROM ` + "`databases`" + ` d JOIN servers s ON s.id = d.server_id WHERE s.portfolio_id = :portfolio
    compare: {attributes: {_type: type, PortfolioID: portfolio_id, ServerID: server_id, DatabaseID: database_id}}
  - name: servers of a portfolio
    query: {pk: "${portfolio}", sk_begins_with: "SERVER#"}
    params: {sql: "SELECT id AS portfolio FROM portfolios"}
    sql: SELECT id, portfolio_id FROM servers WHERE portfolio_id = :portfolio ORDER BY lower(id)
    compare: {attributes: {ServerID: id, PortfolioID: portfolio_id}, ordered: true}
  - name: databases of a server
    query: {index: GSI1, pk: "${portfolio}#${server}", sk_begins_with: "DATABASE#"}
    params: {sql: "SELECT portfolio_id AS portfolio, id AS server FROM servers"}
    sql: {postgres: "SELECT id, server_id FROM databases WHERE server_id = :server", mysql: "SELECT id, server_id FROM ` + "`databases`" + ` WHERE server_id = :server"}
    compare: {attributes: {DatabaseID: id, ServerID: server_id}}
  - name: portfolio by id
    query: {pk: "${portfolio}", sk: "PORTFOLIO"}
    params: {values: [{portfolio: 1}, {portfolio: 2}]}
    sql: {postgres: "SELECT id, name FROM portfolios WHERE id = :portfolio AND name <> ':not_a_param'", mysql: "SELECT id, name FROM portfolios WHERE id = :portfolio"}
    compare: {attributes: {PortfolioID: id, PortfolioName: name}}
`

// mappingWith writes configs/NAME.yaml with its access_patterns replaced
// by patterns, and the entities edited by edit (old → new), to dir.
func mappingWith(t *testing.T, dir, name, patterns string, edits ...string) string {
	t.Helper()
	data, err := os.ReadFile(clitest.RepoPath("configs/" + name + ".yaml"))
	require.NoError(t, err)
	text := string(data)
	text = text[:strings.Index(text, "access_patterns:")] + patterns
	for i := 0; i+1 < len(edits); i += 2 {
		require.Contains(t, text, edits[i])
		text = strings.Replace(text, edits[i], edits[i+1], 1)
	}
	path := filepath.Join(dir, name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// withConfig is tg with another mapping file.
func (tg *target) withConfig(path string) *target {
	c := *tg
	c.flags = append([]string{"--config", path}, tg.flags[2:]...)
	return &c
}

// compareFails runs patterns --compare-source and requires exit 3 with a
// report naming the pattern and the parameter.
func compareFails(t *testing.T, tg *target, dir, pattern, param string, more ...string) {
	t.Helper()
	r := tg.run(t, dir, "patterns", "--compare-source", "--samples", "10")
	require.Equal(t, 3, r.Code, r.Output())
	require.Contains(t, r.Stdout, "MISMATCH  "+pattern, r.Stdout)
	require.Contains(t, r.Stdout, "parameters "+param, r.Stdout)
	for _, m := range more {
		require.Contains(t, r.Stdout, m, r.Stdout)
	}
}

func portfolioKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: sk}}
}

// After migrate, the portfolio design answers its patterns as the SQL
// does, literal (configs/portfolios.yaml) and sampled; and each fault
// behind dynafold's back is a mismatch (exit 3) naming the pattern and
// the parameter, on both engines.
func TestPatternsCompareSourcePortfolios(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
			dir := t.TempDir()
			r := tg.run(t, dir, "table", "create")
			require.Equal(t, 0, r.Code, r.Output())
			r = tg.run(t, dir, "migrate", "--progress", "none")
			require.Equal(t, 0, r.Code, r.Output())

			r = tg.run(t, dir, "patterns", "--compare-source")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "3 comparisons, 0 mismatched")

			sampled := tg.withConfig(mappingWith(t, t.TempDir(), "portfolios", sampledPortfolioPatterns))
			report := filepath.Join(dir, "compare.json")
			r = sampled.run(t, dir, "patterns", "--compare-source", "--report", report)
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "OK  servers of a portfolio: 2 comparisons, all agree")
			require.Contains(t, r.Stdout, "OK  databases of a server: 4 comparisons, all agree")
			rep, err := os.ReadFile(report)
			require.NoError(t, err)
			require.Contains(t, string(rep), `"comparisons": 10`)
			require.Contains(t, string(rep), `"mismatches": 0`)

			// Plain patterns (no --compare-source) still runs the literal
			// patterns and their expectations.
			r = tg.run(t, dir, "patterns")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "3 of 3 patterns hold")

			ctx := t.Context()
			get := func(pk, sk string) map[string]types.AttributeValue {
				out, err := tg.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tg.table), Key: portfolioKey(pk, sk), ConsistentRead: aws.Bool(true)})
				require.NoError(t, err)
				require.NotNil(t, out.Item)
				return out.Item
			}
			put := func(it map[string]types.AttributeValue) {
				_, err := tg.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tg.table), Item: it})
				require.NoError(t, err)
			}
			del := func(pk, sk string) {
				_, err := tg.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tg.table), Key: portfolioKey(pk, sk)})
				require.NoError(t, err)
			}
			with := func(it map[string]types.AttributeValue, attr, v string) map[string]types.AttributeValue {
				c := map[string]types.AttributeValue{}
				for k, av := range it {
					c[k] = av
				}
				c[attr] = &types.AttributeValueMemberS{Value: v}
				return c
			}

			t.Run("item changed", func(t *testing.T) {
				orig := get("2", "SERVER#bobsiteserver")
				put(with(orig, "ServerID", "Renamed"))
				defer put(orig)
				compareFails(t, sampled, dir, "servers of a portfolio", "portfolio=2", `ServerID: DynamoDB "Renamed", SQL "BobSiteServer"`)
			})
			t.Run("item deleted", func(t *testing.T) {
				orig := get("2", "SERVER#bobinternalserver")
				del("2", "SERVER#bobinternalserver")
				defer put(orig)
				compareFails(t, sampled, dir, "servers of a portfolio", "portfolio=2", `only in SQL:      {id: "BobInternalServer"`)
			})
			t.Run("item added", func(t *testing.T) {
				put(map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "1"}, "SK": &types.AttributeValueMemberS{Value: "SERVER#ghost"},
					"ServerID": &types.AttributeValueMemberS{Value: "Ghost"}, "PortfolioID": &types.AttributeValueMemberN{Value: "1"}, "_type": &types.AttributeValueMemberS{Value: "server"}})
				defer del("1", "SERVER#ghost")
				compareFails(t, sampled, dir, "servers of a portfolio", "portfolio=1", `only in DynamoDB: 1 / SERVER#ghost  {PortfolioID: 1, ServerID: "Ghost"}`)
			})
			t.Run("GSI key wrong", func(t *testing.T) {
				orig := get("1", "DATABASE#jeffsitedb")
				put(with(orig, "GSI1PK", "1#JeffInternalServer"))
				defer put(orig)
				compareFails(t, sampled, dir, "databases of a server", `portfolio=1, server="JeffSiteServer"`, `only in SQL:      {id: "JeffSiteDB"`)
			})
			t.Run("sort key not the SQL's order", func(t *testing.T) {
				desc := tg.withConfig(mappingWith(t, t.TempDir(), "portfolios", strings.Replace(sampledPortfolioPatterns, "ORDER BY lower(id)", "ORDER BY lower(id) DESC", 1)))
				compareFails(t, desc, dir, "servers of a portfolio", "portfolio=1", "order differs at position 1")
			})
		})
	}
}

// Alleycat's racer results hold readings split over numbered parts: the
// comparison joins each head and its parts into the one item the mapping
// built, so that the design agrees with its SQL (TestPatternsConfigs), and
// a reading changed in one part behind dynafold's back, or a part deleted,
// is a mismatch naming the pattern, on both engines.
func TestPatternsCompareSourceSplitParts(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t, d, "configs/alleycat.yaml", "testdata/alleycat/"+d.Name+".sql")
			dir := t.TempDir()
			r := tg.run(t, dir, "table", "create")
			require.Equal(t, 0, r.Code, r.Output())
			r = tg.run(t, dir, "migrate", "--progress", "none")
			require.Equal(t, 0, r.Code, r.Output())
			const pattern = "racer 1's second-by-second performance in race 13"
			r = tg.run(t, dir, "patterns", "--compare-source", "--only", "second-by-second")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "OK  "+pattern+": 1 comparison, all agree")

			ctx := t.Context()
			key := portfolioKey("racer-1", "race-13#PART#0002")
			out, err := tg.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tg.table), Key: key, ConsistentRead: aws.Bool(true)})
			require.NoError(t, err)
			require.NotNil(t, out.Item, "race 13's readings split into two parts at least")
			orig := out.Item
			put := func(it map[string]types.AttributeValue) {
				_, err := tg.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tg.table), Item: it})
				require.NoError(t, err)
			}

			t.Run("a reading changed in a part", func(t *testing.T) {
				readings := slices.Clone(orig["Readings"].(*types.AttributeValueMemberL).Value)
				first := maps.Clone(readings[0].(*types.AttributeValueMemberM).Value)
				first["o"] = &types.AttributeValueMemberN{Value: "999999"}
				readings[0] = &types.AttributeValueMemberM{Value: first}
				changed := maps.Clone(orig)
				changed["Readings"] = &types.AttributeValueMemberL{Value: readings}
				put(changed)
				defer put(orig)
				compareFails(t, tg, dir, pattern, "(none)", "Readings: DynamoDB", `"o": 999999`)
			})
			t.Run("a part deleted", func(t *testing.T) {
				_, err := tg.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tg.table), Key: key})
				require.NoError(t, err)
				defer put(orig)
				compareFails(t, tg, dir, pattern, "(none)", "Readings: DynamoDB")
			})
		})
	}
}

// A mapping that drops rows with NULL in a column the SQL keeps (here a
// where: on it) answers its pattern with fewer items than the SQL has
// rows: a mismatch naming the parameter.
func TestPatternsCompareSourceNullDropped(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
			testenv.ExecSQL(t, d.Name, tg.dsn, "ALTER TABLE portfolios ADD COLUMN region varchar(20) NULL; UPDATE portfolios SET region = 'eu' WHERE id = 1")
			patterns := `access_patterns:
  - name: portfolio by id
    query: {pk: "${portfolio}", sk: "PORTFOLIO"}
    params: {sql: "SELECT id AS portfolio FROM portfolios"}
    sql: SELECT id, name, region FROM portfolios WHERE id = :portfolio
    compare: {attributes: {PortfolioID: id, PortfolioName: name, Region: region}}
`
			dropping := tg.withConfig(mappingWith(t, t.TempDir(), "portfolios", patterns,
				"    from: portfolios\n", "    from: portfolios\n    where: region IS NOT NULL\n",
				"      PortfolioName: name\n", "      PortfolioName: name\n      Region: region\n"))
			dir := t.TempDir()
			r := dropping.run(t, dir, "table", "create")
			require.Equal(t, 0, r.Code, r.Output())
			r = dropping.run(t, dir, "migrate", "--progress", "none")
			require.Equal(t, 0, r.Code, r.Output())
			compareFails(t, dropping, dir, "portfolio by id", "portfolio=2", `only in SQL:      {id: 2, name: "Bob's TVs", region: NULL}`)
		})
	}
}

// Chinook, from both engines: its patterns' SQL meanings (configs/
// chinook.yaml) and three sampled patterns agree after migrate, numbers,
// NULLs, decimals and timestamps converted as the mapping converts them.
func TestPatternsCompareSourceChinook(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			ds := newDesign(t, d, "chinook")
			ds.migrate(t)
			r := ds.run(t, ds.dir, "patterns", "--compare-source")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "12 comparisons, 0 mismatched")

			sampled := ds.withConfig(mappingWith(t, t.TempDir(), "chinook", `access_patterns:
  - name: an album's tracks, in track order
    query: {pk: "ARTIST#${artist}", sk_begins_with: "ALBUM#${album|pad:6}#TRACK#"}
    params: {sql: "SELECT album_id AS album, artist_id AS artist FROM album"}
    sql: SELECT track_id, name, composer, unit_price, milliseconds FROM track WHERE album_id = :album ORDER BY track_id
    compare: {attributes: {TrackID: track_id, Name: name, Composer: composer, UnitPrice: unit_price, Milliseconds: milliseconds}, ordered: true}
  - name: an invoice's lines
    query: {pk: "CUSTOMER#${customer}", sk_begins_with: "INVOICE#${invoice|pad:6}#LINE#"}
    params: {sql: "SELECT customer_id AS customer, invoice_id AS invoice FROM invoice"}
    sql: SELECT invoice_line_id, unit_price, quantity, track_id FROM invoice_line WHERE invoice_id = :invoice ORDER BY invoice_line_id
    compare: {attributes: {InvoiceLineID: invoice_line_id, UnitPrice: unit_price, Quantity: quantity, TrackID: track_id}, ordered: true}
  - name: a support rep's latest sales
    query: {index: GSI1, pk: "EMPLOYEE#${rep}", sk_begins_with: "INVOICE#", descending: true, limit: 3}
    params: {sql: "SELECT DISTINCT support_rep_id AS rep FROM customer"}
    sql: |
      SELECT i.invoice_id, i.invoice_date, i.total, i.billing_state FROM invoice i JOIN customer c ON c.customer_id = i.customer_id
       WHERE c.support_rep_id = :rep ORDER BY i.invoice_date DESC, i.invoice_id DESC LIMIT 3
    compare: {attributes: {InvoiceID: invoice_id, InvoiceDate: invoice_date, Total: total, BillingState: billing_state}, ordered: true}
`))
			r = sampled.run(t, ds.dir, "patterns", "--compare-source", "--samples", "25", "--seed", "7")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "53 comparisons, 0 mismatched")
		})
	}
}
