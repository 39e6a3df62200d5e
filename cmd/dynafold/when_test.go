package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// when: {column: c, is_null: true} puts only the rows whose column is NULL
// in the index (a sparse index of unassigned devices), on both engines.
func TestWhenIsNull(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.ExecSQL(t, d.Name, dsn, `
CREATE TABLE devices (id integer PRIMARY KEY, owner_id integer);
INSERT INTO devices VALUES (1, 10), (2, NULL), (3, 30), (4, NULL);`)
			cfg := writeMapping(t, `
version: 1
source: {driver: postgres}
target:
  table: devices
  key: {pk: PK, sk: SK}
  indexes:
    Unassigned: {type: global, pk: UnassignedPK, sk: SK}
entities:
  device:
    from: devices
    key: {pk: "DEVICE#${id}", sk: "DEVICE"}
    index:
      Unassigned: {pk: "UNASSIGNED", when: {column: owner_id, is_null: true}}
`)
			client := testenv.DynamoClient(t)
			table := testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, client, table)
			flags := []string{"--config", cfg, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
			r := clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...)
			require.Equal(t, 0, r.Code, r.Output())
			r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
			require.Equal(t, 0, r.Code, r.Output())
			var unassigned []string
			for _, it := range testenv.ScanItems(t, client, table) {
				if strings.Contains(it, `"UnassignedPK":"UNASSIGNED"`) {
					unassigned = append(unassigned, jsonField(it, "PK"))
				}
			}
			require.Equal(t, []string{"DEVICE#2", "DEVICE#4"}, unassigned)
		})
	}
}
