package mapping

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// portfolioSchema is the portfolio example's source as introspection
// reports it.
func portfolioSchema() *Schema {
	tbl := func(name string, pk string, cols ...source.Column) *source.Table {
		return &source.Table{Ref: source.TableRef{Name: name}, Columns: cols, PrimaryKey: []string{pk}, Unique: [][]string{{pk}}}
	}
	col := func(name string, k value.Kind) source.Column { return source.Column{Name: name, Kind: k} }
	return &Schema{Tables: map[source.TableRef]*source.Table{
		{Name: "portfolios"}: tbl("portfolios", "id", col("id", value.Int), col("name", value.String)),
		{Name: "servers"}:    tbl("servers", "id", col("id", value.String), col("portfolio_id", value.Int)),
		{Name: "databases"}:  tbl("databases", "id", col("id", value.String), col("server_id", value.String)),
	}}
}

const portfolioMapping = `
version: 1
source: {driver: postgres}
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
    attributes:
      PortfolioID: {from: id, type: N}
      PortfolioName: name
  server:
    from: servers
    key: {pk: "${portfolio_id}", sk: "SERVER#${id|lower}"}
    index: {GSI1: {pk: "${portfolio_id}#${id}"}}
    attributes: {PortfolioID: {from: portfolio_id, type: N}, ServerID: id}
  database:
    from: databases
    join:
      server: {from: servers, on: {id: server_id}}
    key: {pk: "${server.portfolio_id}", sk: "DATABASE#${id|lower}"}
    index: {GSI1: {pk: "${server.portfolio_id}#${server_id}"}}
    attributes: {PortfolioID: {from: server.portfolio_id, type: N}, ServerID: server_id, DatabaseID: id}
`

func compileString(t *testing.T, yaml string, schema *Schema) (*Plan, error) {
	t.Helper()
	cfg, err := Parse([]byte(yaml))
	require.NoError(t, err)
	return Compile(cfg, schema, Options{})
}

func TestCompilePortfolio(t *testing.T) {
	p, err := compileString(t, portfolioMapping, portfolioSchema())
	require.NoError(t, err)
	db := p.Entity("database")
	require.NotNil(t, db)
	q := db.Query
	require.Equal(t, []string{"id"}, q.Key)
	require.Len(t, q.Joins, 1)
	require.Equal(t, source.Join{Alias: "server", Table: source.TableRef{Name: "servers"}, On: []source.JoinOn{{Column: "id", RefColumn: "server_id"}}}, q.Joins[0])
	require.Equal(t, []string{"id", "server.portfolio_id", "server_id"}, db.ColumnNames())

	// The database row of JeffSiteDB, joined with its server.
	items, err := db.Build(value.Row{value.StringValue("JeffSiteDB"), value.IntValue(1), value.StringValue("JeffSiteServer")}, nil)
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, map[string]types.AttributeValue{
		"PK":          &types.AttributeValueMemberS{Value: "1"},
		"SK":          &types.AttributeValueMemberS{Value: "DATABASE#jeffsitedb"},
		"GSI1PK":      &types.AttributeValueMemberS{Value: "1#JeffSiteServer"},
		"PortfolioID": &types.AttributeValueMemberN{Value: "1"},
		"ServerID":    &types.AttributeValueMemberS{Value: "JeffSiteServer"},
		"DatabaseID":  &types.AttributeValueMemberS{Value: "JeffSiteDB"},
		"_type":       &types.AttributeValueMemberS{Value: "database"},
	}, items[0].Attrs)
	require.Equal(t, "1\x00DATABASE#jeffsitedb", items[0].Key)
	require.Equal(t, "1", items[0].PartitionKey())
}

func TestBuildNullKeyNamesEntityAndRow(t *testing.T) {
	p, err := compileString(t, portfolioMapping, portfolioSchema())
	require.NoError(t, err)
	// An orphan database: the LEFT JOIN found no server, so the key is NULL.
	_, err = p.Entity("database").Build(value.Row{value.StringValue("LostDB"), value.NullValue(), value.StringValue("GoneServer")}, nil)
	var rerr *RowError
	require.ErrorAs(t, err, &rerr)
	require.Equal(t, "database", rerr.Entity)
	require.Equal(t, "PK", rerr.Attribute)
	require.Equal(t, `entity database, row id="LostDB": PK is NULL: column server.portfolio_id has no value`, err.Error())
}

func TestBuildSparseIndexAndEmptyKeys(t *testing.T) {
	schema := &Schema{Tables: map[source.TableRef]*source.Table{
		{Name: "device_reports"}: {
			Ref: source.TableRef{Name: "device_reports"}, PrimaryKey: []string{"device_id", "reported_at"},
			Columns: []source.Column{{Name: "device_id", Kind: value.String}, {Name: "reported_at", Kind: value.Timestamp}, {Name: "escalated_to", Kind: value.String}, {Name: "status", Kind: value.String}},
		},
	}}
	p, err := compileString(t, `
version: 1
source: {driver: postgres}
target:
  table: devices
  key: {pk: PK, sk: SK}
  indexes:
    Escalations: {pk: EscalatedTo, sk: SK}
entities:
  report:
    from: device_reports
    key: {pk: "DEVICE#${device_id}", sk: "REPORT#${reported_at|iso}"}
    attributes: {EscalatedTo: escalated_to, Status: status}
`, schema)
	require.NoError(t, err)
	e := p.Entity("report")
	ts := value.TimestampValue(mustTime("2024-05-01T10:00:00Z"))
	items, err := e.Build(value.Row{value.StringValue("d1"), ts, value.NullValue(), value.StringValue("OK")}, nil)
	require.NoError(t, err)
	require.NotContains(t, items[0].Attrs, "EscalatedTo", "NULL index key: item stays out of the index")
	items, err = e.Build(value.Row{value.StringValue("d1"), ts, value.StringValue(""), value.StringValue("OK")}, nil)
	require.NoError(t, err)
	require.NotContains(t, items[0].Attrs, "EscalatedTo", "an empty index key cannot be stored; left out like NULL")
	items, err = e.Build(value.Row{value.StringValue("d1"), ts, value.StringValue("tech-alice"), value.StringValue("FAULT")}, nil)
	require.NoError(t, err)
	require.Equal(t, &types.AttributeValueMemberS{Value: "tech-alice"}, items[0].Attrs["EscalatedTo"])
	require.Equal(t, &types.AttributeValueMemberS{Value: "REPORT#2024-05-01T10:00:00.000Z"}, items[0].Attrs["SK"])

	// An empty string in the table's own key is an error, not a silent skip.
	p2, err := compileString(t, `
version: 1
source: {driver: postgres}
target: {table: devices, key: {pk: PK, sk: SK}}
entities:
  report: {from: device_reports, key: {pk: "${device_id}", sk: "${reported_at}"}}
`, schema)
	require.NoError(t, err)
	_, err = p2.Entity("report").Build(value.Row{value.StringValue(""), ts}, nil)
	require.EqualError(t, err, `entity report, row device_id="", reported_at=2024-05-01T10:00:00.000Z: PK key is an empty string; DynamoDB keys cannot be empty`)
}

func TestCompileColumnErrors(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"unknown column in key": {
			yaml: `entities: {server: {from: servers, key: {pk: "${portfolio_id}", sk: "SERVER#${hostnme}"}}}`,
			want: `entities.server.key.sk: unknown column "hostnme" in table servers`,
		},
		"column case": {
			yaml: `entities: {server: {from: servers, key: {pk: "${Portfolio_ID}", sk: "S"}}}`,
			want: `entities.server.key.pk: unknown column "Portfolio_ID" in table servers (did you mean "portfolio_id"?)`,
		},
		"unknown table": {
			yaml: `entities: {server: {from: servrs, key: {pk: "${id}", sk: "S"}}}`,
			want: `entities.server.from: table "servrs" does not exist in the source`,
		},
		"unknown alias": {
			yaml: `entities: {db: {from: databases, key: {pk: "${srv.portfolio_id}", sk: "D"}}}`,
			want: `entities.db.key.pk: unknown join alias "srv" in "srv.portfolio_id" (declare it under join:)`,
		},
		"join on non-unique column": {
			yaml: `entities: {srv: {from: servers, join: {p: {from: databases, on: {server_id: id}}}, key: {pk: "${id}", sk: "S"}}}`,
			want: `entities.srv.join.p.on: joining databases on (server_id) could match several rows per srv row`,
		},
		"transform kind": {
			yaml: `entities: {srv: {from: servers, key: {pk: "${id|epoch}", sk: "S"}}}`,
			want: `entities.srv.key.pk: in "${id|epoch}": transform epoch applies to timestamp or date values, not string (column id is string)`,
		},
		"attribute column": {
			yaml: `entities: {srv: {from: servers, key: {pk: "${id}", sk: "S"}, attributes: {Owner: owner_id}}}`,
			want: `entities.srv.attributes.Owner: unknown column "owner_id" in table servers`,
		},
	}
	head := "version: 1\nsource: {driver: postgres}\ntarget: {table: t_x, key: {pk: PK, sk: SK}}\n"
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := compileString(t, head+c.yaml, portfolioSchema())
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

func TestVerticalPartitioningItems(t *testing.T) {
	schema := &Schema{Tables: map[source.TableRef]*source.Table{
		{Name: "products"}: {Ref: source.TableRef{Name: "products"}, PrimaryKey: []string{"id"},
			Columns: []source.Column{{Name: "id", Kind: value.Int}, {Name: "name", Kind: value.String}, {Name: "price", Kind: value.Decimal}, {Name: "stock", Kind: value.Int}}},
	}}
	p, err := compileString(t, `
version: 1
source: {driver: postgres}
target: {table: products, key: {pk: PK, sk: SK}, type_attribute: _type}
entities:
  product:
    from: products
    key: {pk: "PRODUCT#${id}"}
    attributes: {ProductID: {from: id}}
    items:
      details: {key: {sk: DETAILS}, attributes: {Name: name}}
      pricing: {key: {sk: PRICING}, type: ProductPricing, attributes: {Price: price}}
      inventory: {key: {sk: INVENTORY}, inherit_attributes: false, attributes: {Stock: stock}}
`, schema)
	require.NoError(t, err)
	items, err := p.Entity("product").Build(value.Row{value.IntValue(9), value.StringValue("Lamp"), value.DecimalValue("19.90"), value.IntValue(3)}, nil)
	require.NoError(t, err)
	require.Len(t, items, 3)
	got := map[string]map[string]types.AttributeValue{}
	for _, it := range items {
		got[it.Attrs["SK"].(*types.AttributeValueMemberS).Value] = it.Attrs
	}
	require.Equal(t, &types.AttributeValueMemberS{Value: "product#details"}, got["DETAILS"]["_type"])
	require.Equal(t, &types.AttributeValueMemberS{Value: "ProductPricing"}, got["PRICING"]["_type"])
	require.Equal(t, &types.AttributeValueMemberN{Value: "19.9"}, got["PRICING"]["Price"])
	require.Contains(t, got["PRICING"], "ProductID")
	require.NotContains(t, got["INVENTORY"], "ProductID")
	require.Equal(t, &types.AttributeValueMemberN{Value: "3"}, got["INVENTORY"]["Stock"])
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}
