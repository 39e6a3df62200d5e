package design

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
)

// repoPath is a path from the repository's root.
func repoPath(rel string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", rel)
}

// staticModel compiles a mapping file without the source, as --no-source
// does.
func staticModel(t *testing.T, path string) *Model {
	t.Helper()
	cfg, err := mapping.Load(path)
	require.NoError(t, err)
	return modelOf(t, cfg, path)
}

func modelOf(t *testing.T, cfg *mapping.Config, name string) *Model {
	t.Helper()
	p, err := mapping.Compile(cfg, nil, mapping.Options{})
	require.NoError(t, err)
	return New(p, name)
}

// configs are the example mappings.
func configs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(repoPath("configs/*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// The Workbench model has the fields AWS's generator and Workbench's
// exports write, each of the JSON type Workbench reads, and one facet per
// entity whose aliases are the entity's key templates and whose attributes
// are what the mapping writes.
func TestWorkbenchFieldsAndFacets(t *testing.T) {
	m := staticModel(t, repoPath("configs/portfolios.yaml"))
	var buf bytes.Buffer
	require.NoError(t, m.WriteWorkbench(&buf, time.Date(2026, 1, 2, 15, 4, 0, 0, time.UTC)))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))

	require.IsType(t, "", doc["ModelName"])
	meta := doc["ModelMetadata"].(map[string]any)
	for _, k := range []string{"Author", "DateCreated", "DateLastModified", "Description", "AWSService", "Version"} {
		require.IsType(t, "", meta[k], k)
	}
	require.Equal(t, "Jan 2, 2026, 3:04 PM", meta["DateCreated"])
	require.Contains(t, meta["Description"], `3. databases of JeffSiteServer: index GSI1: GSI1PK = "1#JeffSiteServer" AND begins_with(SK, "DATABASE").`)
	tables := doc["DataModel"].([]any)
	require.Len(t, tables, 1)
	tbl := tables[0].(map[string]any)
	require.Equal(t, "portfolios", tbl["TableName"])
	require.Equal(t, map[string]any{
		"PartitionKey": map[string]any{"AttributeName": "PK", "AttributeType": "S"},
		"SortKey":      map[string]any{"AttributeName": "SK", "AttributeType": "S"},
	}, tbl["KeyAttributes"])
	require.Equal(t, []any{map[string]any{
		"IndexName": "GSI1",
		"KeyAttributes": map[string]any{
			"PartitionKey": map[string]any{"AttributeName": "GSI1PK", "AttributeType": "S"},
			"SortKey":      map[string]any{"AttributeName": "SK", "AttributeType": "S"},
		},
		"Projection": map[string]any{"ProjectionType": "ALL"},
	}}, tbl["GlobalSecondaryIndexes"])
	require.Equal(t, []any{}, tbl["TableData"], "no source, no samples")
	require.Equal(t, "PAY_PER_REQUEST", tbl["BillingMode"])

	types := map[string]string{}
	for _, a := range tbl["NonKeyAttributes"].([]any) {
		a := a.(map[string]any)
		types[a["AttributeName"].(string)] = a["AttributeType"].(string)
	}
	// Declared types (PortfolioID: N), index keys (S), the type attribute;
	// without the source a column's type is unknown and shown as S.
	require.Equal(t, map[string]string{"PortfolioID": "N", "PortfolioName": "S", "_type": "S", "GSI1PK": "S", "ServerID": "S", "DatabaseID": "S"}, types)

	facets := tbl["TableFacets"].([]any)
	cfg := m.Plan.Config
	require.Len(t, facets, len(cfg.Entities))
	for i, e := range cfg.Entities {
		f := facets[i].(map[string]any)
		require.Equal(t, e.Key, f["FacetName"])
		require.Equal(t, map[string]any{"PartitionKeyAlias": e.Value.Key.PK, "SortKeyAlias": e.Value.Key.SK}, f["KeyAttributeAlias"])
		want := []any{}
		for _, a := range e.Value.Attributes {
			want = append(want, a.Key)
		}
		for _, ix := range e.Value.Index {
			want = append(want, m.Plan.Table.Index(ix.Key).PK.Name)
		}
		want = append(want, "_type")
		require.ElementsMatch(t, want, f["NonKeyAttributes"], e.Key)
		for _, n := range f["NonKeyAttributes"].([]any) {
			require.Contains(t, types, n, "every facet attribute is declared in NonKeyAttributes")
		}
	}
}

// Every design in configs/ draws every artifact without its source.
func TestEveryConfigDrawsEveryArtifact(t *testing.T) {
	for _, path := range configs(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			m := staticModel(t, path)
			for name, write := range map[string]func(*bytes.Buffer) error{
				"workbench":      func(b *bytes.Buffer) error { return m.WriteWorkbench(b, time.Now()) },
				"cloudformation": func(b *bytes.Buffer) error { return m.WriteCloudFormation(b) },
				"cdk":            func(b *bytes.Buffer) error { return m.WriteCDK(b) },
				"terraform":      func(b *bytes.Buffer) error { return m.WriteTerraform(b) },
				"html":           func(b *bytes.Buffer) error { return m.WriteHTML(b) },
			} {
				var buf bytes.Buffer
				require.NoError(t, write(&buf), name)
				require.NotZero(t, buf.Len(), name)
			}
		})
	}
}

// kitchenSink is a mapping with everything a table definition can say:
// provisioned capacity (one GSI with its own), every projection, a local
// index, a Number index key, TTL and a stream.
const kitchenSink = `
version: 1
source: {driver: postgres, dsn: postgres://x@localhost/x}
target:
  table: kitchen-sink.v2
  billing: provisioned
  capacity: {read: 7, write: 3}
  key: {pk: PK, sk: SK}
  attribute_types: {Rank: N}
  indexes:
    ByRank: {type: global, pk: GSI1PK, sk: Rank, projection: include, include: [Name, Score], capacity: {read: 2, write: 1}}
    Keys: {type: global, pk: GSI2PK, projection: keys_only}
    ByName: {type: local, sk: Name, projection: keys_only}
  type_attribute: _type
  ttl_attribute: ExpiresAt
  stream: new_and_old_images
entities:
  player:
    from: players
    key: {pk: "P#${id}", sk: "PLAYER"}
    index: {ByRank: {pk: "ALL"}, Keys: {pk: "${team}"}}
    ttl: {from: expires_at}
    attributes: {Name: name, Rank: {from: rank, type: N}, Score: {from: score, type: N}}
`

func kitchenSinkModel(t *testing.T) *Model {
	t.Helper()
	cfg, err := mapping.Parse([]byte(kitchenSink))
	require.NoError(t, err)
	return modelOf(t, cfg, "kitchen-sink.yaml")
}

// The workbench model and the HTML page carry what the other artifacts
// say in their own fields: TTL and the stream.
func TestWorkbenchAndPageCarryTTLAndStream(t *testing.T) {
	m := kitchenSinkModel(t)
	require.Contains(t, m.workbenchDescription(), " TTL on ExpiresAt. Stream: NEW_AND_OLD_IMAGES.")
	var page bytes.Buffer
	require.NoError(t, m.WriteHTML(&page))
	require.Contains(t, page.String(), "TTL on <code>ExpiresAt</code> · stream <code>NEW_AND_OLD_IMAGES</code>")
}

// A table with local indexes cannot be imported: ImportTable cannot create
// them.
func TestImportRefusesLocalIndexes(t *testing.T) {
	m := kitchenSinkModel(t)
	require.ErrorContains(t, m.SetImport("s3://b/p/"), "ImportTable cannot create local secondary indexes (index ByName)")
	m = staticModel(t, repoPath("configs/portfolios.yaml"))
	require.ErrorContains(t, m.SetImport("file:///tmp/x/"), "--import-from must be the s3://bucket/prefix/")
	require.NoError(t, m.SetImport("s3://exports/portfolios/"))
	require.Equal(t, Import{URL: "s3://exports/portfolios/", Bucket: "exports", KeyPrefix: "portfolios/data/"}, *m.Import)
}

// writeFile writes an artifact into dir.
func writeFile(t *testing.T, dir, name string, write func(io.Writer) error) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, write(&buf))
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return path
}

// The artifacts name the mapping file without the machine's directories:
// relative to the working directory when the file is inside it, by its
// base name otherwise.
func TestConfigName(t *testing.T) {
	wd := t.TempDir()
	for _, tc := range []struct {
		name, path, want string
	}{
		{"inside, absolute", filepath.Join(wd, "configs", "shop.yaml"), "configs/shop.yaml"},
		{"inside, at the top", filepath.Join(wd, "shop.yaml"), "shop.yaml"},
		{"outside, absolute", "/home/alice/work/shop.yaml", "shop.yaml"},
		{"outside, a sibling with the same prefix", wd + "-other/shop.yaml", "shop.yaml"},
		{"relative, as typed", "configs/shop.yaml", "shop.yaml"}, // relative to the test's own directory, not wd
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ConfigName(tc.path, wd))
		})
	}
	here, err := os.Getwd()
	require.NoError(t, err)
	require.Equal(t, "configs/shop.yaml", ConfigName("configs/shop.yaml", here), "a relative path inside the working directory stays as typed")
	require.Equal(t, "shop.yaml", ConfigName("../../elsewhere/shop.yaml", here))
}
