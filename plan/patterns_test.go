package plan

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// patternMapping is a portfolio table with a numeric-sort-key local index,
// a global index without a sort key and a numeric-partition-key index,
// followed by the access patterns under test.
const patternMapping = head + `
target:
  table: portfolios
  key: {pk: PK, sk: SK}
  attribute_types: {Rank: N, Num: N}
  indexes:
    ByRank: {type: local, sk: Rank}
    ByName: {type: global, pk: PortfolioName}
    ByNum: {type: global, pk: Num, sk: SK}
  type_attribute: _type
entities:
  portfolio:
    from: portfolios
    key: {pk: "${id}", sk: PORTFOLIO}
    attributes: {PortfolioID: {from: id, type: N}, PortfolioName: name, Rank: id, Num: id}
%s`

// patternFindings lints the mapping with the given access_patterns: block
// and returns the findings of the pattern checks.
func patternFindings(t *testing.T, patterns string) []lf {
	t.Helper()
	out := []lf{}
	for _, f := range lintOf(t, strings.Replace(patternMapping, "%s", patterns, 1), nil) {
		if strings.HasPrefix(f.check, "pattern") {
			out = append(out, f)
		}
	}
	return out
}

func TestLintPatterns(t *testing.T) {
	cases := []struct {
		name     string
		patterns string
		want     []lf
	}{
		{name: "clean", patterns: `access_patterns:
  - name: ranked
    query: {index: ByRank, pk: "1", sk_between: ["1", "${n}"]}
  - name: by name
    query: {index: ByName, pk: Jeff}
  - name: by num
    query: {index: ByNum, pk: "${num}", sk_begins_with: PORT}
  - name: ordered
    query: {pk: "1"}
    sql: SELECT id FROM portfolios WHERE id = 1 ORDER BY id
    compare: {attributes: {PortfolioID: id}, ordered: true}
  - name: unordered, ORDER BY only where it does not order the answer
    query: {pk: "1"}
    sql: |
      SELECT id, row_number() OVER (ORDER BY name) AS n FROM (SELECT * FROM portfolios ORDER BY id) p
       WHERE name <> 'x ORDER BY y' -- ORDER BY z
      /* ORDER BY w */ AND name <> 'ORDER BY v'
    compare: {attributes: {PortfolioID: id}}
`, want: []lf{}},
		{name: "sort-key condition without a sort key", patterns: `access_patterns:
  - name: by name
    query: {index: ByName, pk: Jeff, sk_begins_with: "P"}
`, want: []lf{
			{"warning", "pattern.no_sort_key", "access_patterns[0].query", `pattern "by name" has a sort-key condition (sk_begins_with) but index ByName has no sort key, so DynamoDB rejects the query; drop the condition, or query an index whose sort key is the attribute`},
		}},
		{name: "begins_with on a Number", patterns: `access_patterns:
  - name: top ranked
    query: {index: ByRank, pk: "1", sk_begins_with: "9"}
`, want: []lf{
			{"warning", "pattern.begins_with_number", "access_patterns[0].query.sk_begins_with", `pattern "top ranked" uses begins_with on index ByRank, whose sort key Rank is a Number: DynamoDB allows begins_with only on String and Binary keys; use sk_between (or sk_ge and sk_lt) over the numbers the prefix stands for`},
		}},
		{name: "a Number key given text", patterns: `access_patterns:
  - name: low ranks
    query: {index: ByRank, pk: "1", sk_lt: "ten"}
  - name: by num
    query: {index: ByNum, pk: "NUM#1"}
`, want: []lf{
			{"warning", "pattern.key_not_number", "access_patterns[0].query.sk_lt", `pattern "low ranks" compares index ByRank's sort key Rank, a Number, with the text "ten", so DynamoDB rejects the query; give a number`},
			{"warning", "pattern.key_not_number", "access_patterns[1].query.pk", `pattern "by num" gives index ByNum's partition key Num, a Number, the text "NUM#1", so DynamoDB rejects the query; give a number`},
		}},
		{name: "ORDER BY not compared in order", patterns: `access_patterns:
  - name: portfolio 1
    query: {pk: "1"}
    sql: SELECT id FROM portfolios WHERE id = 1 ORDER BY id
    compare: {attributes: {PortfolioID: id}}
`, want: []lf{
			{"warning", "pattern.order_not_compared", "access_patterns[0].compare", `pattern "portfolio 1"'s SQL has ORDER BY but compare: is not ordered, so its answers compare as multisets and a sort key that does not give the SQL's order goes unnoticed; add ordered: true to compare:, or drop the ORDER BY (or list pattern.order_not_compared under lint.ignore when the order does not matter)`},
		}},
		{name: "ordered without ORDER BY, on one engine", patterns: `access_patterns:
  - name: portfolio 1
    query: {pk: "1"}
    sql:
      postgres: SELECT id FROM portfolios WHERE id = 1 ORDER BY id
      mysql: SELECT id FROM portfolios WHERE id = 1
    compare: {attributes: {PortfolioID: id}, ordered: true}
`, want: []lf{
			{"warning", "pattern.ordered_without_order_by", "access_patterns[0].compare.ordered", `pattern "portfolio 1" is compared in order (ordered: true) but its SQL for mysql has no ORDER BY, so the rows come in no set order and the comparison can fail at random; add an ORDER BY that gives the sort key's order, or drop ordered:`},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, patternFindings(t, c.patterns))
		})
	}
}

// lint.ignore acknowledges a pattern check as it does any other.
func TestLintPatternsAcknowledged(t *testing.T) {
	got := patternFindings(t, `lint: {ignore: [pattern.order_not_compared]}
access_patterns:
  - name: portfolio 1
    query: {pk: "1"}
    sql: SELECT id FROM portfolios WHERE id = 1 ORDER BY id
    compare: {attributes: {PortfolioID: id}}
`)
	require.Len(t, got, 1)
	require.Equal(t, "note", got[0].sev)
	require.Contains(t, got[0].msg, "(acknowledged: lint.ignore lists pattern.order_not_compared)")
}

func TestHasOrderBy(t *testing.T) {
	for sql, want := range map[string]bool{
		"SELECT 1 ORDER BY 1":                                  true,
		"select a from t\norder\n  by a desc limit 3":          true,
		"SELECT a FROM t UNION ALL SELECT b FROM u ORDER BY 1": true,
		"SELECT 1": false,
		"SELECT * FROM (SELECT a FROM t ORDER BY a) x":             false,
		"SELECT rank() OVER (ORDER BY a) FROM t":                   false,
		"SELECT 'ORDER BY a' FROM t":                               false,
		"SELECT 'it''s' FROM t -- ORDER BY a":                      false,
		"SELECT `order` FROM t /* ORDER BY a */":                   false,
		"SELECT $tag$ ORDER BY a $tag$, $1 FROM t":                 false,
		`SELECT "x"" ORDER BY a" FROM t`:                           false,
		"SELECT a AS border, by FROM t":                            false,
		"SELECT a FROM t WHERE b = 'x' ORDER BY a, 'SERVER#' || b": true,
		"SELECT j #> '{a}' AS a FROM t ORDER BY a":                 true,
	} {
		require.Equal(t, want, hasOrderBy(sql, "postgres"), sql)
	}
	// On MySQL a # starts a comment, and $ is no quote.
	require.False(t, hasOrderBy("SELECT a FROM t # ORDER BY a", "mysql"))
	require.True(t, hasOrderBy("SELECT a AS $x$ FROM t ORDER BY a", "mysql"))
}
