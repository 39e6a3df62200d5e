package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// An index whose key templates meet a NULL on one side only would get half
// a key: plan reports such rows per index (count and an example row), and
// migrate leaves the half off the item when it exists only for that index
// (an index: template keying no other index); an attribute that attributes:
// also writes is kept. Both engines.
func TestHalfIndexKeys(t *testing.T) {
	t.Parallel()
	cfgBody := `
version: 1
source: {driver: postgres}
target:
  table: shops
  key: {pk: PK, sk: SK}
  indexes:
    ByRegion: {type: global, pk: RegionPK, sk: RegionSK}
    ByCode: {type: global, pk: Region, sk: CodeSK}
entities:
  shop:
    from: shops
    key: {pk: "SHOP#${id}", sk: "SHOP"}
    index:
      ByRegion: {pk: "R#${region}", sk: "C#${code}"}
      ByCode: {sk: "${code}"}
    attributes:
      Region: region
`
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.ExecSQL(t, d.Name, dsn, `
CREATE TABLE shops (id integer PRIMARY KEY, region varchar(10), code varchar(10));
INSERT INTO shops VALUES (1, 'eu', 'a'), (2, 'eu', NULL), (3, NULL, 'b'), (4, NULL, NULL);`)
			cfg := writeMapping(t, cfgBody)

			r, rep := runPlan(t, "--config", cfg, "--source-dsn", dsn, "--no-target")
			require.Equal(t, 0, r.Code, r.Output())
			var partial []planFinding
			for _, f := range findingsOf(rep) {
				if f.Check == "data.partial_index_key" {
					partial = append(partial, f)
				}
			}
			require.Equal(t, []planFinding{
				{"warning", "data.partial_index_key", "entities.shop.index.ByCode", "2 items have only half of index ByCode's key (Region, CodeSK), e.g. row id=2: they are not in the index, and the half they have is left off them unless the table's key or another index needs it (half_key: keep keeps it)"},
				{"warning", "data.partial_index_key", "entities.shop.index.ByRegion", "2 items have only half of index ByRegion's key (RegionPK, RegionSK), e.g. row id=2: they are not in the index, and the half they have is left off them unless the table's key or another index needs it (half_key: keep keeps it)"},
			}, partial)
			for _, ix := range rep.Indexes {
				require.EqualValues(t, 2, ix.PartialKeyItems, ix.Index)
				require.EqualValues(t, 1, ix.Items, ix.Index)
			}

			client := testenv.DynamoClient(t)
			table := testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, client, table)
			flags := []string{"--config", cfg, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
			r = clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...)
			require.Equal(t, 0, r.Code, r.Output())
			r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
			require.Equal(t, 0, r.Code, r.Output())
			require.Equal(t, []string{
				`{"CodeSK":"a","PK":"SHOP#1","Region":"eu","RegionPK":"R#eu","RegionSK":"C#a","SK":"SHOP"}`,
				`{"PK":"SHOP#2","Region":"eu","SK":"SHOP"}`, // RegionPK left off; Region kept: attributes: writes it
				`{"PK":"SHOP#3","SK":"SHOP"}`,               // RegionSK and CodeSK left off
				`{"PK":"SHOP#4","SK":"SHOP"}`,
			}, testenv.ScanItems(t, client, table))
		})
	}
}

// half_key: keep on an index keeps the half an item has (for readers that
// use it); plan says so, and the other index still drops its half.
func TestHalfIndexKeyKept(t *testing.T) {
	t.Parallel()
	const body = `
version: 1
source: {driver: postgres}
target:
  table: shops
  key: {pk: PK, sk: SK}
  indexes:
    ByRegion: {type: global, pk: RegionPK, sk: RegionSK, half_key: keep}
    ByCode: {type: global, pk: Region, sk: CodeSK}
entities:
  shop:
    from: shops
    key: {pk: "SHOP#${id}", sk: "SHOP"}
    index:
      ByRegion: {pk: "R#${region}", sk: "C#${code}"}
      ByCode: {sk: "${code}"}
    attributes:
      Region: region
`
	d := testenv.Drivers()[0]
	dsn := d.NewDB(t)
	testenv.ExecSQL(t, d.Name, dsn, `
CREATE TABLE shops (id integer PRIMARY KEY, region varchar(10), code varchar(10));
INSERT INTO shops VALUES (1, 'eu', 'a'), (2, 'eu', NULL), (3, NULL, 'b'), (4, NULL, NULL);`)
	cfg := writeMapping(t, body)

	r, rep := runPlan(t, "--config", cfg, "--source-dsn", dsn, "--no-target")
	require.Equal(t, 0, r.Code, r.Output())
	var msgs []string
	for _, f := range findingsOf(rep) {
		if f.Check == "data.partial_index_key" && f.Path == "entities.shop.index.ByRegion" {
			msgs = append(msgs, f.Message)
		}
	}
	require.Equal(t, []string{"2 items have only half of index ByRegion's key (RegionPK, RegionSK), e.g. row id=2: they are not in the index, and the half they have is kept (half_key: keep)"}, msgs)

	client := testenv.DynamoClient(t)
	table := testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, client, table)
	flags := []string{"--config", cfg, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
	r = clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	require.Equal(t, []string{
		`{"CodeSK":"a","PK":"SHOP#1","Region":"eu","RegionPK":"R#eu","RegionSK":"C#a","SK":"SHOP"}`,
		`{"PK":"SHOP#2","Region":"eu","RegionPK":"R#eu","SK":"SHOP"}`, // ByRegion's half kept
		`{"PK":"SHOP#3","RegionSK":"C#b","SK":"SHOP"}`,                // kept; ByCode's CodeSK left off
		`{"PK":"SHOP#4","SK":"SHOP"}`,
	}, testenv.ScanItems(t, client, table))

	// A value other than drop or keep is a mapping error.
	bad := writeMapping(t, strings.Replace(body, "half_key: keep", "half_key: maybe", 1))
	r = clitest.Run(t, "", nil, append([]string{"table", "create", "--config", bad}, flags[2:]...)...)
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, `target.indexes.ByRegion.half_key: unknown half_key "maybe" (drop or keep)`)
}

// A self-reference the top of the hierarchy leaves NULL (the top manager
// reports to no one) keys an index sparsely on purpose: with sparse: true
// on the entity's index: entry, plan states the count of items left out as
// a note and ends with "no errors", not "review the warnings"; migrate
// writes the same items either way. Both engines.
func TestSparseSelfReference(t *testing.T) {
	t.Parallel()
	const body = `
version: 1
source: {driver: postgres}
target:
  table: shop
  key: {pk: PK, sk: SK}
  indexes:
    GSI1: {type: global, pk: GSI1PK, sk: GSI1SK}
entities:
  employee:
    from: employees
    join:
      manager: {from: employees, on: {employee_id: reports_to}}
    key: {pk: "EMPLOYEE#${employee_id}", sk: "EMPLOYEE#${employee_id}"}
    index:
      GSI1: {pk: "EMPLOYEE#${reports_to}", sk: "EMPLOYEE#${employee_id}"SPARSE}
    attributes: {LastName: last_name, Manager: manager.last_name}
`
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			dsn := d.NewDB(t)
			testenv.ExecSQL(t, d.Name, dsn, `
CREATE TABLE employees (employee_id integer PRIMARY KEY, last_name varchar(20) NOT NULL, reports_to integer REFERENCES employees (employee_id));
INSERT INTO employees VALUES (2, 'Fuller', NULL), (1, 'Davolio', 2), (3, 'Leverling', 2), (5, 'Buchanan', 2), (6, 'Suyama', 5);`)
			var scans [][]string
			for _, tc := range []struct{ sparse, finding, status string }{
				{"", `warning data.partial_index_key entities.employee.index.GSI1: 1 items have only half of index GSI1's key`, "no errors; review the warnings"},
				{", sparse: true", `note data.sparse_index entities.employee.index.GSI1: 1 item left out of index GSI1 on purpose (sparse: true), e.g. row employee_id=2`, "no errors ("},
			} {
				cfg := writeMapping(t, strings.Replace(body, "SPARSE", tc.sparse, 1))
				r := clitest.Run(t, "", nil, "plan", "--config", cfg, "--source-dsn", dsn, "--no-target")
				require.Equal(t, 0, r.Code, r.Output())
				require.Contains(t, r.Stdout, tc.status, r.Stdout)
				r, rep := runPlan(t, "--config", cfg, "--source-dsn", dsn, "--no-target")
				require.Equal(t, 0, r.Code, r.Output())
				var data []string
				for _, f := range rep.Findings {
					if f.Origin == "data" {
						data = append(data, f.String())
					}
				}
				require.Len(t, data, 1, "%q", data)
				require.Contains(t, data[0], tc.finding)

				client := testenv.DynamoClient(t)
				table := testenv.NewTableName(t)
				testenv.DeleteTableOnCleanup(t, client, table)
				flags := []string{"--config", cfg, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
				r = clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...)
				require.Equal(t, 0, r.Code, r.Output())
				r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
				require.Equal(t, 0, r.Code, r.Output())
				scans = append(scans, testenv.ScanItems(t, client, table))
			}
			require.Equal(t, scans[0], scans[1], "sparse: true changes what plan says, not the items")
			require.Contains(t, scans[1], `{"LastName":"Fuller","PK":"EMPLOYEE#2","SK":"EMPLOYEE#2"}`, "the top manager: no manager, in no GSI1 partition, no half key")
		})
	}
}
