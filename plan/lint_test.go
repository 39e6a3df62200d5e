package plan

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// testSchema is a source as introspection would report it.
func testSchema() *mapping.Schema {
	col := func(name string, k value.Kind) source.Column { return source.Column{Name: name, Kind: k} }
	tbl := func(name string, pk []string, unique [][]string, cols ...source.Column) *source.Table {
		return &source.Table{Ref: source.TableRef{Name: name}, Columns: cols, PrimaryKey: pk, Unique: append([][]string{pk}, unique...)}
	}
	tables := []*source.Table{
		tbl("portfolios", []string{"id"}, nil, col("id", value.Int), col("name", value.String)),
		tbl("servers", []string{"id"}, nil, col("id", value.String), col("portfolio_id", value.Int)),
		tbl("databases", []string{"id"}, nil, col("id", value.String), col("server_id", value.String)),
		tbl("users", []string{"id"}, [][]string{{"email"}}, col("id", value.Int), col("email", value.String), col("name", value.String), col("org", value.String), col("org_id", value.Int), col("status", value.String)),
		tbl("orders", []string{"id"}, nil, col("id", value.Int), col("user_id", value.Int), col("total", value.Decimal), col("placed_at", value.Timestamp)),
		tbl("order_lines", []string{"order_id", "line_no"}, nil, col("order_id", value.Int), col("line_no", value.Int), col("sku", value.String)),
		tbl("logs", []string{"server_id", "n"}, nil, col("server_id", value.String), col("n", value.Int), col("msg", value.String)),
		tbl("hosts", []string{"id"}, nil, col("id", value.Int), col("name", value.String)),
		tbl("employees", []string{"employee_id"}, nil, col("employee_id", value.Int), col("reports_to", value.Int), col("last_name", value.String)),
	}
	s := &mapping.Schema{Tables: map[source.TableRef]*source.Table{}}
	for _, t := range tables {
		s.Tables[t.Ref] = t
	}
	return s
}

func compileFor(t *testing.T, yaml string) *mapping.Plan {
	t.Helper()
	cfg, err := mapping.Parse([]byte(yaml))
	require.NoError(t, err)
	p, err := mapping.Compile(cfg, testSchema(), mapping.Options{})
	require.NoError(t, err)
	return p
}

type lf struct{ sev, check, path, msg string }

func lintOf(t *testing.T, yaml string, target *TargetInfo) []lf {
	t.Helper()
	out := []lf{}
	for _, f := range Lint(compileFor(t, yaml), testSchema(), target) {
		require.Equal(t, Mapping, f.Origin)
		out = append(out, lf{string(f.Severity), f.Check, f.Path, f.Message})
	}
	return out
}

const head = `
version: 1
source: {driver: postgres}
`

var lintCases = []struct {
	name   string
	yaml   string
	target *TargetInfo
	want   []lf
}{
	{name: "portfolio", yaml: head + `
target:
  table: portfolios
  key: {pk: PK, sk: SK}
  indexes:
    GSI1: {type: global, pk: GSI1PK, sk: SK}
  type_attribute: _type
entities:
  portfolio:
    from: portfolios
    key: {pk: "${id}", sk: PORTFOLIO}
    attributes: {PortfolioID: {from: id, type: N}, PortfolioName: name}
  server:
    from: servers
    key: {pk: "${portfolio_id}", sk: "SERVER#${id|lower}"}
    index: {GSI1: {pk: "${portfolio_id}#${id}"}}
  database:
    from: databases
    join: {server: {from: servers, on: {id: server_id}}}
    key: {pk: "${server.portfolio_id}", sk: "DATABASE#${id}"}
    index: {GSI1: {pk: "${server.portfolio_id}#${server_id}"}}
`,
		want: []lf{
			{"note", "key.case_fold", "entities.server.key", "the key uses primary-key column id only through lower/upper: values that differ only in letter case would get the same key (the measured duplicate check counts any that exist)"},
		},
	},
	{name: "colliding entities", yaml: head + `
target: {table: shop, key: {pk: PK, sk: SK}}
entities:
  user:
    from: users
    key: {pk: "${id}", sk: "${id}"}
  order:
    from: orders
    key: {pk: "${user_id}", sk: "${id}"}
  host:
    from: hosts
    key: {pk: "${id}", sk: "HOST"}
  named:
    from: users
    key: {pk: "${id}", sk: "${name}"}
    attributes: {Email: email}
`,
		want: []lf{
			{"error", "key.collision", "entities.order.key", "entities user and order can produce the same PK+SK: no constant text in their keys (pk \"${id}\" / \"${user_id}\", sk \"${id}\" / \"${id}\") tells them apart, so one item would overwrite the other; give each a distinct constant prefix in the sort key, e.g. \"ORDER#${…}\""},
			{"error", "key.collision", "entities.named.key", "entities user and named can produce the same PK+SK: no constant text in their keys (pk \"${id}\" / \"${id}\", sk \"${id}\" / \"${name}\") tells them apart, so one item would overwrite the other; give each a distinct constant prefix in the sort key, e.g. \"NAMED#${…}\""},
			{"error", "key.collision", "entities.named.key", "entities order and named can produce the same PK+SK: no constant text in their keys (pk \"${user_id}\" / \"${id}\", sk \"${id}\" / \"${name}\") tells them apart, so one item would overwrite the other; give each a distinct constant prefix in the sort key, e.g. \"NAMED#${…}\""},
			{"error", "key.collision", "entities.named.key", "entities host and named can produce the same PK+SK: no constant text in their keys (pk \"${id}\" / \"${id}\", sk \"HOST\" / \"${name}\") tells them apart, so one item would overwrite the other; give each a distinct constant prefix in the sort key, e.g. \"NAMED#${…}\""},
		},
	},
	{name: "hierarchical sort keys", yaml: head + `
target: {table: ops, key: {pk: PK, sk: SK}}
entities:
  server:
    from: servers
    key: {pk: "P#${portfolio_id}", sk: "SERVER#${id}"}
  log:
    from: logs
    join: {server: {from: servers, on: {id: server_id}}}
    key: {pk: "P#${server.portfolio_id}", sk: "SERVER#${server_id}#LOG#${n|pad:9}"}
  host:
    from: hosts
    key: {pk: "P#${id}", sk: "SERVER#${id}"}
`,
		want: []lf{
			{"error", "key.collision", "entities.host.key", "entities server and host can produce the same PK+SK: no constant text in their keys (pk \"P#${portfolio_id}\" / \"P#${id}\", sk \"SERVER#${id}\" / \"SERVER#${id}\") tells them apart, so one item would overwrite the other; give each a distinct constant prefix in the sort key, e.g. \"HOST#${…}\""},
			{"warning", "key.collision", "entities.log.key", "entities server and log can produce the same PK+SK (pk \"P#${portfolio_id}\" / \"P#${server.portfolio_id}\", sk \"SERVER#${id}\" / \"SERVER#${server_id}#LOG#${n|pad:9}\") when a value contains the other's delimiter text"},
		},
	},
	{name: "non-unique keys", yaml: head + `
target: {table: shop, key: {pk: PK, sk: SK}}
entities:
  line:
    from: order_lines
    key: {pk: "ORDER#${order_id}", sk: "LINE"}
  bucketed:
    from: orders
    key: {pk: "USER#${user_id}", sk: "ORDER#${id|shard:4}"}
  by_email:
    from: users
    key: {pk: "EMAIL#${email}", sk: "USER"}
`,
		want: []lf{
			{"error", "key.incomplete", "entities.line.key", "the key (pk \"ORDER#${order_id}\", sk \"LINE\") does not use column line_no of the primary key (order_id, line_no) of table order_lines: rows that differ only in line_no get the same key and overwrite each other"},
			{"error", "key.incomplete", "entities.bucketed.key", "the key (pk \"USER#${user_id}\", sk \"ORDER#${id|shard:4}\") does not use column id of the primary key (id) of table orders: rows that differ only in id get the same key and overwrite each other"},
		},
	},
	{name: "delimiters", yaml: head + `
target:
  table: shop
  key: {pk: PK, sk: SK}
  indexes:
    GSI1: {type: global, pk: GSI1PK, sk: GSI1SK}
entities:
  user:
    from: users
    key: {pk: "${org}#${name}#${id}", sk: "USER"}
    index: {GSI1: {pk: "${org_id}#${name}", sk: "${status}${id}"}}
  order:
    from: orders
    key: {pk: "ORDER#${id}", sk: "${placed_at|iso}${user_id}"}
`,
		want: []lf{
			{"warning", "key.delimiter", "entities.user.key.pk", "template \"${org}#${name}#${id}\" separates ${org} and ${name} with \"#\", which both values can contain: (\"a#b\", \"c\") and (\"a\", \"b#c\") give the same key"},
			{"warning", "key.delimiter", "entities.user.index.GSI1.sk", "template \"${status}${id}\" puts ${status} and ${id} side by side with nothing between them: (\"12\", \"3\") and (\"1\", \"23\") give the same key; separate them with a character neither can contain, e.g. \"#\""},
		},
	},
	{name: "indexes", yaml: head + `
target:
  table: shop
  key: {pk: PK, sk: SK}
  indexes:
    GSI1: {type: global, pk: GSI1PK, sk: GSI1SK, projection: keys_only}
    GSI2: {type: global, pk: GSI2PK, projection: include, include: [Total, Missing, PK]}
    GSI3: {type: global, pk: GSI3PK}
    LSI1: {type: local, sk: LSI1SK}
  type_attribute: _type
entities:
  order:
    from: orders
    key: {pk: "USER#${user_id}", sk: "ORDER#${id}"}
    index:
      GSI1: {pk: "ORDER#${id}"}
      GSI2: {pk: "ORDERS"}
      LSI1: {sk: "${placed_at|iso}"}
    attributes: {Total: total}
`, target: &TargetInfo{Checked: true, Exists: true, Differences: []string{"index LSI1 is missing: the mapping declares a local (local indexes can only be created with the table) index"}},
		want: []lf{
			{"error", "index.lsi_missing", "target.indexes.LSI1", "table shop exists without local index LSI1, and a local index cannot be added to an existing table: delete and recreate the table, or drop the index from the mapping"},
			{"warning", "index.partial_key", "entities.order.index.GSI1", "order sets GSI1PK but not GSI1SK, so its items never appear in index GSI1"},
			{"warning", "index.type_not_projected", "target.indexes.GSI1.projection", "index GSI1 projects keys only, not the type attribute _type: queries on it cannot tell entities apart; use projection: include with include: [_type]"},
			{"warning", "index.projection", "target.indexes.GSI2.include", "index GSI2 projects Missing, which no entity writes"},
			{"warning", "index.type_not_projected", "target.indexes.GSI2.include", "index GSI2 does not project the type attribute _type: queries on it cannot tell entities apart; add _type to include:"},
			{"warning", "target.mismatch", "target", "table shop exists but differs from the mapping, and migrate refuses to write to it until it matches:\n  - index LSI1 is missing: the mapping declares a local (local indexes can only be created with the table) index"},
			{"note", "index.unused", "target.indexes.GSI1", "no entity sets the key of index GSI1 (GSI1PK, GSI1SK), so it stays empty"},
			{"note", "index.projection", "target.indexes.GSI2.include", "PK is a key attribute, which every index projects anyway"},
			{"note", "index.unused", "target.indexes.GSI3", "no entity sets the key of index GSI3 (GSI3PK), so it stays empty"},
			{"note", "index.lsi", "target.indexes.LSI1", "local index LSI1 can only be created with the table (dynafold table create does), and with it every item collection (the items of one PK value and their index entries) is limited to 10 GB; see the measured collection sizes"},
			{"note", "name.reserved", "entities.order.attributes.Total", "\"Total\" is a DynamoDB reserved word: writes are fine, but queries, filters and updates must refer to it through an expression attribute name (#total)"},
		},
	},
	{name: "names and key types", yaml: head + `
target:
  table: shop
  key: {pk: PK, sk: SK}
  attribute_types: {SK: N}
entities:
  user:
    from: users
    key: {pk: "USER#${id}", sk: "1${id}"}
    attributes: {Status: status, Name: name, ThisAttributeNameIsLongerThanThirtyTwoBytes: email}
  order:
    from: orders
    key: {pk: "ORDER#${id}", sk: "V#${id}"}
access_patterns:
  - name: by status
    query: {pk: "USER#1", sk_begins_with: "1"}
`,
		want: []lf{
			{"error", "key.type", "entities.order.key.sk", "SK is a Number key but the template \"V#${id}\" has the text \"V#\": no row can produce a number, so every row would be rejected"},
			{"warning", "pattern.begins_with_number", "access_patterns[0].query.sk_begins_with", "pattern \"by status\" uses begins_with on the table, whose sort key SK is a Number: DynamoDB allows begins_with only on String and Binary keys; use sk_between (or sk_ge and sk_lt) over the numbers the prefix stands for"},
			{"note", "name.reserved", "entities.user.attributes.Status", "\"Status\" is a DynamoDB reserved word: writes are fine, but queries, filters and updates must refer to it through an expression attribute name (#status)"},
			{"note", "name.reserved", "entities.user.attributes.Name", "\"Name\" is a DynamoDB reserved word: writes are fine, but queries, filters and updates must refer to it through an expression attribute name (#name)"},
			{"note", "name.length", "entities.user.attributes.ThisAttributeNameIsLongerThanThirtyTwoBytes", "attribute name \"ThisAttributeNameIsLongerThanThirtyTwoBytes\" is 43 bytes; names are stored in every item and count toward its size and write units"},
		},
	},
}

func TestLint(t *testing.T) {
	for _, c := range lintCases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, lintOf(t, c.yaml, c.target))
		})
	}
}
