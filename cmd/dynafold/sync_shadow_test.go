package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
)

// shadowPortfolios is the portfolio design (configs/portfolios.yaml's
// entities) with access patterns whose parameters are sampled from the
// source, so that the shadow comparison covers every portfolio and
// server, the GSI included. It is the test's own: configs/ changes apart.
const shadowPortfolios = `version: 1
source: {driver: postgres}
target:
  table: portfolios
  key: {pk: PK, sk: SK}
  indexes:
    GSI1: {type: global, pk: GSI1PK, sk: SK, projection: all}
  type_attribute: _type
entities:
  portfolio:
    from: portfolios
    key: {pk: "${id}", sk: "PORTFOLIO"}
    attributes:
      PortfolioID: {from: id, type: N}
      PortfolioName: name
  server:
    from: servers
    key: {pk: "${portfolio_id}", sk: "SERVER#${id|lower}"}
    index:
      GSI1: {pk: "${portfolio_id}#${id}"}
    attributes:
      PortfolioID: {from: portfolio_id, type: N}
      ServerID: id
  database:
    from: databases
    join:
      server: {from: servers, on: {id: server_id}}
    key: {pk: "${server.portfolio_id}", sk: "DATABASE#${id|lower}"}
    index:
      GSI1: {pk: "${server.portfolio_id}#${server_id}"}
    attributes:
      PortfolioID: {from: server.portfolio_id, type: N}
      ServerID: server_id
      DatabaseID: id
access_patterns:
  - name: a portfolio's collection
    params: {sql: "SELECT id AS portfolio FROM portfolios"}
    query: {pk: "${portfolio}"}
    sql:
      postgres: |
        SELECT 'portfolio' AS type, id AS portfolio_id, NULL AS server_id, NULL AS database_id, name
          FROM portfolios WHERE id = :portfolio
        UNION ALL SELECT 'server', portfolio_id, id, NULL, NULL FROM servers WHERE portfolio_id = :portfolio
        UNION ALL SELECT 'database', s.portfolio_id, d.server_id, d.id, NULL
          FROM databases d JOIN servers s ON s.id = d.server_id WHERE s.portfolio_id = :portfolio
      mysql: |
        SELECT 'portfolio' AS type, id AS portfolio_id, NULL AS server_id, NULL AS database_id, name
          FROM portfolios WHERE id = :portfolio
        UNION ALL SELECT 'server', portfolio_id, id, NULL, NULL FROM servers WHERE portfolio_id = :portfolio
        UNION ALL SELECT 'database', s.portfolio_id, d.server_id, d.id, NULL
          FROM ` + "`databases`" + ` d JOIN servers s ON s.id = d.server_id WHERE s.portfolio_id = :portfolio
    compare:
      attributes: {_type: type, PortfolioID: portfolio_id, PortfolioName: name, ServerID: server_id, DatabaseID: database_id}
  - name: servers of a portfolio
    params: {sql: "SELECT id AS portfolio FROM portfolios"}
    query: {pk: "${portfolio}", sk_begins_with: "SERVER"}
    sql: SELECT id, portfolio_id FROM servers WHERE portfolio_id = :portfolio
    compare:
      attributes: {ServerID: id, PortfolioID: portfolio_id, SK: "SERVER#${id|lower}"}
  - name: databases of a server
    params: {sql: "SELECT portfolio_id AS portfolio, id AS server FROM servers"}
    query: {index: GSI1, pk: "${portfolio}#${server}", sk_begins_with: "DATABASE"}
    sql:
      postgres: |
        SELECT d.id, d.server_id, s.portfolio_id FROM databases d JOIN servers s ON s.id = d.server_id
         WHERE s.portfolio_id = :portfolio AND d.server_id = :server
      mysql: |
        SELECT d.id, d.server_id, s.portfolio_id FROM ` + "`databases`" + ` d JOIN servers s ON s.id = d.server_id
         WHERE s.portfolio_id = :portfolio AND d.server_id = :server
    compare:
      attributes: {DatabaseID: id, ServerID: server_id, GSI1PK: "${portfolio_id}#${server_id}"}
`

// shadowTotal sums a dynafold_shadow_* counter over its patterns.
func shadowTotal(m map[string]float64, name string) float64 {
	var n float64
	for k, v := range m {
		if base, _, _ := strings.Cut(k, "{"); base == name {
			n += v
		}
	}
	return n
}

// Sync with --shadow-patterns under a churn workload (inserts, servers
// moving between portfolios, deletes) compares continuously and finds no
// mismatch: each comparison waited for sync to apply past its SQL
// snapshot. An item then changed behind sync's back is a mismatch within
// 10 s, logged with the pattern, its parameters and the two queries.
func TestSyncShadow(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			sd := newSyncDesign(t, d, "portfolios", "configs/portfolios.yaml")
			mapping := filepath.Join(t.TempDir(), "portfolios-shadow.yaml")
			require.NoError(t, os.WriteFile(mapping, []byte(shadowPortfolios), 0o644))
			i := slices.Index(sd.flags, "--config")
			require.GreaterOrEqual(t, i, 0)
			sd.flags[i+1] = mapping

			s := &serviceSync{syncDesign: sd, metrics: freeAddr(t)}
			// The parameters are read again every 2 s: the churn adds portfolios
			// and deletes empty ones.
			report := filepath.Join(t.TempDir(), "report.json")
			s.run(t, "--shadow-patterns", "--shadow-rate", "20", "--shadow-params-every", "2s", "--report", report)
			c := startChurn(t, d.Name, sd.dsn, 7)
			s.appliedSince(t, time.Now())
			time.Sleep(10 * time.Second)
			c.halt()
			m, err := scrape(s.metrics)
			require.NoError(t, err)
			compared, mismatched, skipped := shadowTotal(m, "dynafold_shadow_comparisons_total"), shadowTotal(m, "dynafold_shadow_mismatches_total"), shadowTotal(m, "dynafold_shadow_skipped_total")
			t.Logf("under churn (%d transactions): %.0f comparisons, %.0f mismatches, %.0f skipped", c.committed.Load(), compared, mismatched, skipped)
			require.Greater(t, compared, 0.0, "comparisons under churn; output:\n%s", lastLines(s.out.String(), 40))
			require.Zero(t, mismatched, "mismatches under churn; output:\n%s", lastLines(s.out.String(), 80))

			// A server item no row produces, added behind sync's back, in
			// the collection of a portfolio.
			rows := testenv.Rows(t, d.Name, sd.dsn, "SELECT min(id) FROM portfolios")
			p := rows[0][0]
			ctx := context.Background()
			_, err = sd.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(sd.table), Item: map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: p}, "SK": &types.AttributeValueMemberS{Value: "SERVER#ghostserver"},
				"_type": &types.AttributeValueMemberS{Value: "server"}, "ServerID": &types.AttributeValueMemberS{Value: "GhostServer"},
				"PortfolioID": &types.AttributeValueMemberN{Value: p},
			}})
			require.NoError(t, err)
			at := time.Now()
			require.Eventually(t, func() bool {
				m, err := scrape(s.metrics)
				return err == nil && shadowTotal(m, "dynafold_shadow_mismatches_total") > 0
			}, 10*time.Second, 100*time.Millisecond, "a mismatch within 10 s of the change; output:\n%s", lastLines(s.out.String(), 40))
			t.Logf("mismatch counted %s after the change", time.Since(at).Round(time.Millisecond))
			require.Eventually(t, func() bool {
				out := s.out.String()
				return containsAll(out, "shadow comparison: DynamoDB's answer differs", "GhostServer", "portfolio="+p, "aws dynamodb query")
			}, 5*time.Second, 100*time.Millisecond, "the mismatch logged; output:\n%s", lastLines(s.out.String(), 40))
			ok, err := ready(s.metrics)
			require.NoError(t, err)
			require.True(t, ok, "/readyz is unaffected by mismatches")
			s.stop(t)
			require.Contains(t, s.out.String(), `shadow "servers of a portfolio": `)
			body, err := os.ReadFile(report)
			require.NoError(t, err)
			require.Contains(t, string(body), `"shadow": [`)
			require.Contains(t, string(body), `"pattern": "servers of a portfolio"`)
		})
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
