package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// MySQL spatial columns are written as WKT text by default (ST_AsText in
// the generated SQL), as GeoJSON with type: M (ST_AsGeoJSON), never as
// their stored bytes; plan says what each becomes.
func TestSpatialColumns(t *testing.T) {
	t.Parallel()
	var d testenv.Driver
	for _, x := range testenv.Drivers() {
		if x.Name == "mysql" {
			d = x
		}
	}
	require.Equal(t, "mysql", d.Name)
	dsn := d.NewDB(t)
	testenv.ExecSQL(t, d.Name, dsn, "CREATE TABLE places (id int PRIMARY KEY, loc POINT NOT NULL, area GEOMETRY NULL); "+
		"INSERT INTO places VALUES (1, ST_GeomFromText('POINT(-112.8 49.7)'), ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))')), "+
		"(2, ST_GeomFromText('POINT(2.35 48.85)'), NULL);")
	cfg := writeMapping(t, `
version: 1
source: {driver: mysql}
target: {table: places, key: {pk: PK, sk: SK}}
entities:
  place:
    from: places
    key: {pk: "PLACE#${id}", sk: "PLACE"}
    attributes:
      Location: loc
      LocationJSON: {from: loc, type: M}
      Area: area
`)
	r, rep := runPlan(t, "--config", cfg, "--source-dsn", dsn, "--no-target")
	require.Equal(t, 0, r.Code, r.Output())
	var notes []string
	for _, f := range rep.Findings {
		if f.Check == "type.spatial" {
			notes = append(notes, f.Message)
		}
	}
	require.Equal(t, []string{
		"spatial column loc is written as WKT text (ST_AsText), e.g. POINT(-112.8 49.7), and as GeoJSON (ST_AsGeoJSON) for its type: M attributes; its stored bytes (SRID and WKB) are never written",
		"spatial column area is written as WKT text (ST_AsText), e.g. POINT(-112.8 49.7); its stored bytes (SRID and WKB) are never written",
	}, notes)

	client := testenv.DynamoClient(t)
	table := testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, client, table)
	flags := []string{"--config", cfg, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
	r = clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	require.Equal(t, []string{
		`{"Area":"POLYGON((0 0,1 0,1 1,0 0))","Location":"POINT(-112.8 49.7)","LocationJSON":{"coordinates":[-112.8,49.7],"type":"Point"},"PK":"PLACE#1","SK":"PLACE"}`,
		`{"Location":"POINT(2.35 48.85)","LocationJSON":{"coordinates":[2.35,48.85],"type":"Point"},"PK":"PLACE#2","SK":"PLACE"}`,
	}, testenv.ScanItems(t, client, table))
}
