package reverse

import (
	"fmt"

	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// table is a source table as introspection reports it; its first column
// is the primary key unless pk says otherwise.
func table(name string, pk []string, cols ...source.Column) *source.Table {
	if pk == nil {
		pk = []string{cols[0].Name}
	}
	return &source.Table{Ref: source.TableRef{Name: name}, Columns: cols, PrimaryKey: pk, Unique: [][]string{pk}}
}

// col is a NOT NULL column without a default.
func col(name string, k value.Kind, dbType string) source.Column {
	return source.Column{Name: name, Kind: k, DBType: dbType}
}

func nullable(c source.Column) source.Column { c.Nullable = true; return c }

func defaulted(c source.Column) source.Column { c.HasDefault = true; return c }

// analyze compiles the mapping against the tables and analyses it.
func analyze(t *testing.T, yaml string, tables ...*source.Table) *Report {
	t.Helper()
	cfg, err := mapping.Parse([]byte(yaml))
	require.NoError(t, err)
	schema := &mapping.Schema{Tables: map[source.TableRef]*source.Table{}, Queries: map[string]*source.Table{}}
	for _, tb := range tables {
		if tb.Ref.Name == "" {
			for _, e := range cfg.Entities {
				if e.Value.Query != "" {
					schema.Queries[e.Key] = tb
				}
			}
			continue
		}
		schema.Tables[tb.Ref] = tb
	}
	p, err := mapping.Compile(cfg, schema, mapping.Options{})
	require.NoError(t, err)
	return Analyze(p, schema)
}

func entity(t *testing.T, r *Report, name string) *Entity {
	t.Helper()
	for _, e := range r.Entities {
		if e.Entity == name {
			return e
		}
	}
	t.Fatalf("no entity %s", name)
	return nil
}

func column(t *testing.T, cols []Column, name string) Column {
	t.Helper()
	for _, c := range cols {
		if c.Column == name {
			return c
		}
	}
	t.Fatalf("no column %s", name)
	return Column{}
}

const header = `
version: 1
source: {driver: postgres}
target:
  table: things
  key: {pk: PK, sk: SK}
  indexes:
    GSI1: {type: global, pk: GSI1PK, sk: SK}
  type_attribute: _type
`

var portfolioTables = []*source.Table{
	table("portfolios", nil, col("id", value.Int, "integer"), col("name", value.String, "text")),
	table("servers", nil, col("id", value.String, "text"), col("portfolio_id", value.Int, "integer")),
	table("databases", nil, col("id", value.String, "text"), col("server_id", value.String, "text")),
}

const portfolioEntities = `
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

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
