package mapping

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// :name parameters become the driver's placeholders, a name used twice
// is one $n on PostgreSQL and two ? on MySQL, and nothing that only looks
// like a parameter is touched: ::casts, := , string literals, quoted
// identifiers, dollar quotes and comments.
func TestBindParams(t *testing.T) {
	for _, tc := range []struct {
		name, sql, driver, want string
		args                    []string
	}{
		{"one", "SELECT * FROM t WHERE id = :id", "postgres", "SELECT * FROM t WHERE id = $1", []string{"id"}},
		{"twice, postgres", "SELECT :a, :b, :a", "postgres", "SELECT $1, $2, $1", []string{"a", "b"}},
		{"twice, mysql", "SELECT :a, :b, :a", "mysql", "SELECT ?, ?, ?", []string{"a", "b", "a"}},
		{"cast", "SELECT x::text FROM t WHERE d = :d::date", "postgres", "SELECT x::text FROM t WHERE d = $1::date", []string{"d"}},
		{"in a literal", "SELECT ':no', 'it''s :no' WHERE a = :yes", "postgres", "SELECT ':no', 'it''s :no' WHERE a = $1", []string{"yes"}},
		{"mysql backslash", `SELECT 'a\':no' WHERE a = :yes`, "mysql", `SELECT 'a\':no' WHERE a = ?`, []string{"yes"}},
		{"quoted identifier", `SELECT ":no", ` + "`:no`" + ` WHERE a = :yes`, "mysql", `SELECT ":no", ` + "`:no`" + ` WHERE a = ?`, []string{"yes"}},
		{"dollar quote", "SELECT $$ :no $$, $tag$ :no $tag$, :yes", "postgres", "SELECT $$ :no $$, $tag$ :no $tag$, $1", []string{"yes"}},
		{"comments", "SELECT 1 -- :no\n/* :no */ WHERE a = :yes", "postgres", "SELECT 1 -- :no\n/* :no */ WHERE a = $1", []string{"yes"}},
		{"assignment", "SELECT @x := :v", "mysql", "SELECT @x := ?", []string{"v"}},
		{"slice", "SELECT arr[lo:hi] FROM t", "postgres", "SELECT arr[lo:hi] FROM t", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := BindParams(tc.sql, tc.driver)
			require.NoError(t, err)
			require.Equal(t, tc.want, b.Text)
			require.Equal(t, tc.args, b.Args)
		})
	}
	_, err := BindParams("SELECT 'open", "postgres")
	require.EqualError(t, err, "unterminated ' at offset 7")
	null, err := NullParams("SELECT * FROM t WHERE a = :a AND b = ':b'", "mysql")
	require.NoError(t, err)
	require.Equal(t, "SELECT * FROM t WHERE a = NULL AND b = ':b'", null)
}

const patternBase = `
version: 1
source: {driver: postgres}
target: {table: things, key: {pk: PK, sk: SK}, type_attribute: _type}
entities:
  server: {from: servers, key: {pk: "${portfolio_id}", sk: "SERVER#${id}"}, attributes: {ServerID: id, Name: name}}
access_patterns:
`

// The SQL meaning of a pattern is checked at load, each problem naming
// its key.
func TestPatternMeaningValidates(t *testing.T) {
	for _, tc := range []struct{ pattern, want string }{
		{`{name: x, query: {pk: "${p}"}, params: {values: [{p: 1}]}, sql: "SELECT :server", compare: {attributes: {ServerID: id}}}`,
			`access_patterns[0].sql: unknown parameter ":server" (params: gives p)`},
		{`{name: x, query: {pk: "${portfolo}"}, params: {values: [{portfolio: 1}]}, sql: "SELECT :portfolio", compare: {attributes: {ServerID: id}}}`,
			`access_patterns[0].query.pk: unknown parameter "portfolo" (did you mean "portfolio"?)`},
		{`{name: x, query: {pk: "1"}, sql: "SELECT id FROM servers"}`,
			`access_patterns[0].sql: sql: needs compare: to say which item attribute corresponds to which column`},
		{`{name: x, query: {pk: "1"}, params: {sql: "SELECT 1 AS p", values: [{p: 1}]}, sql: "SELECT 1", compare: {attributes: {ServerID: id}}}`,
			`access_patterns[0].params: set one of sql: (a query whose columns are the parameters) and values: (literal tuples), not both`},
		{`{name: x, query: {pk: "1"}, sql: "SELECT id", compare: {attributes: {ServerId: id}}}`,
			`access_patterns[0].compare.attributes.ServerId: no entity writes attribute "ServerId" (did you mean "ServerID"?)`},
		{`{name: x, query: {pk: "1"}, sql: "SELECT :p", compare: {attributes: {ServerID: id}}}`,
			`access_patterns[0].sql: unknown parameter ":p" (the pattern has no params:)`},
		{`{name: x, query: {pk: "1"}, sql: {postgres: "SELECT 1"}, compare: {attributes: {ServerID: id}}}`,
			`access_patterns[0].sql.mysql: no SQL for mysql: give one text, or both postgres: and mysql:`},
		{`{name: x, query: {pk: "${p}"}, params: {values: [{p: 1}, {q: 2}]}, sql: "SELECT :p", compare: {attributes: {ServerID: id}}}`,
			`access_patterns[0].params.values[1]: every tuple names the same parameters as the first (p), not q`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			cfg, err := Parse([]byte(patternBase + "  - " + tc.pattern + "\n"))
			require.NoError(t, err)
			require.EqualError(t, Validate(cfg, Options{}), tc.want)
		})
	}
	// The strict key checker knows the new keys, and still rejects a typo.
	_, err := Parse([]byte(patternBase + `  - {name: x, query: {pk: "1"}, sql: "SELECT 1", compare: {attributes: {ServerID: id}, orderd: true}}` + "\n"))
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), `access_patterns[0].compare.orderd: unknown key "orderd" (did you mean "ordered"?)`), err.Error())
	cfg, err := Parse([]byte(patternBase + `  - {name: ok, query: {pk: "${p}#${shard}", shards: 2}, params: {values: [{p: 1}]}, sql: "SELECT ':x'::text, :p", compare: {attributes: {ServerID: id, _type: "server"}, ordered: true}}` + "\n"))
	require.NoError(t, err)
	require.NoError(t, Validate(cfg, Options{}))
}
