package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/render"
	"github.com/dynafold/dynafold/internal/testenv"
)

// failRowsMapping builds one item per part: the NULL bin of one row is a
// NULL partition key, which on_error: fail stops the run on.
const failRowsMapping = `version: 1
source: {driver: postgres}  # the test's --source-dsn decides the engine
target:
  table: failrows
  key: {pk: PK, sk: SK}
  type_attribute: _type
entities:
  part:
    from: parts
    on_error: fail
    key: {pk: "${bin}", sk: "PART#${id|pad:6}"}
    attributes:
      Id: {from: id, type: N}
`

// failRowsSQL creates parts with ids 1..n over 40 partition keys, and a
// NULL bin at id bad.
func failRowsSQL(driver string, n, bad int) string {
	text := "text"
	if driver == "mysql" {
		text = "varchar(20)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE parts (id integer PRIMARY KEY, bin %s NULL, code %s NOT NULL);\nINSERT INTO parts (id, bin, code) VALUES ", text, text)
	for id := 1; id <= n; id++ {
		if id > 1 {
			b.WriteString(", ")
		}
		bin := fmt.Sprintf("'B%02d'", id%40)
		if id == bad {
			bin = "NULL"
		}
		fmt.Fprintf(&b, "(%d, %s, 'C-%06d')", id, bin, id)
	}
	b.WriteString(";\n")
	return b.String()
}

// itemIDs returns the Id attribute of every item of a scan.
func itemIDs(t *testing.T, items []string) []int {
	t.Helper()
	var ids []int
	for _, line := range items {
		var it struct{ Id int }
		require.NoError(t, json.Unmarshal([]byte(line), &it), line)
		ids = append(ids, it.Id)
	}
	sort.Ints(ids)
	return ids
}

// A bad row under on_error: fail, deep in the table, after several batches
// and checkpoint saves, from PostgreSQL and from MariaDB. The run exits 1
// with an error naming the entity, the row's source key, the mapping key
// and the reason. What it leaves:
//   - the checkpoint holds, per shard, a position before the bad row, and
//     the table holds every item of every row up to it;
//   - the table may also hold items of rows past the checkpoint, but only
//     of rows the run had read (its report's rows_read), never of the bad
//     row;
//   - once the row is fixed at the source, a rerun resumes from the
//     checkpoint (rows up to it are not read again), exits 0, and the table
//     equals a fresh migrate's; verify exits 0.
//
// The source is read through a proxy that delays each answer, in small
// pages, so that the writes of the first rows are acknowledged and
// checkpointed while the run still reads towards the bad row.
func TestBadRowUnderFailStopsAtTheCheckpoint(t *testing.T) {
	t.Parallel()
	const rows, bad = 600, 550
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.ExecSQL(t, d.Name, dsn, failRowsSQL(d.Name, rows, bad))
			host := dsnHost(t, d.Name, dsn)
			proxy := startProxy(t, host)
			proxy.SetLatency(20 * time.Millisecond)
			slowDSN := strings.Replace(dsn, host, proxy.Addr(), 1)

			client := testenv.DynamoClient(t)
			table := testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, client, table)
			config := writeMapping(t, failRowsMapping)
			common := []string{"--config", config, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
			r := clitest.Run(t, "", nil, append([]string{"table", "create", "--source-dsn", dsn}, common...)...)
			require.Equal(t, exitOK, r.Code, r.Output())

			dir := t.TempDir()
			// Two shards (--concurrency 1) read one after the other, ten
			// rows a page, one writer, the checkpoint saved every 50 ms.
			migrate := append([]string{"migrate", "--progress", "none", "--concurrency", "1", "--writers", "1",
				"--page-size", "10", "--checkpoint-every", "50ms", "--source-dsn", slowDSN}, common...)
			r = clitest.Run(t, dir, nil, append(migrate, "--report", "failed.json")...)
			require.Equal(t, exitFailure, r.Code, r.Output())
			msg := fmt.Sprintf("entity part, row id=%d: PK is NULL: column bin has no value", bad)
			require.Contains(t, r.Stderr, msg)
			failed := readReport(t, filepath.Join(dir, "failed.json"))
			require.Equal(t, exitFailure, failed.ExitCode)
			require.Equal(t, msg, failed.Error)
			require.True(t, failed.Summary.Failed)
			require.Regexp(t, `(?m)^run failed in `, r.Stdout)

			// The checkpoint: not complete, and per shard a position
			// before the bad row, the rows up to it counted.
			data, err := os.ReadFile(filepath.Join(dir, ".dynafold", table+".checkpoint.json"))
			require.NoError(t, err)
			var ckpt struct {
				Complete bool               `json:"complete"`
				Shards   []checkpoint.Shard `json:"shards"`
			}
			require.NoError(t, json.Unmarshal(data, &ckpt), string(data))
			require.False(t, ckpt.Complete)
			require.Len(t, ckpt.Shards, 2)
			var covered []int // rows the checkpoint holds as written
			var ckptRows int64
			for _, s := range ckpt.Shards {
				lo, hi := 1, rows+1
				if s.Range.Lo != nil {
					lo = int(s.Range.Lo.I)
				}
				if s.Range.Hi != nil {
					hi = int(s.Range.Hi.I)
				}
				end := lo - 1 // nothing acknowledged
				switch {
				case s.Status == checkpoint.Done:
					end = hi - 1
				case s.After != nil:
					end = int(s.After[0].I)
				}
				if lo <= bad && bad < hi {
					require.NotEqual(t, checkpoint.Done, s.Status, "the bad row's shard is not done")
					require.Less(t, end, bad, "the checkpoint never passes the bad row")
				}
				for id := lo; id <= end; id++ {
					covered = append(covered, id)
				}
				require.EqualValues(t, end-lo+1, s.Rows, "shard %d counts the rows up to its position", s.ID)
				ckptRows += s.Rows
			}
			t.Logf("checkpoint: %d rows written; report: %d rows read, %d items acknowledged", ckptRows, failed.Summary.Total.RowsRead, failed.Summary.Total.ItemsWritten)
			// How many depends on the machine's load (a busy CI machine
			// acknowledges later); that some did is what the run must show.
			require.Positive(t, ckptRows, "batches were acknowledged and checkpointed before the bad row was reached")
			require.Contains(t, r.Stdout, fmt.Sprintf("the checkpoint holds %s rows as written", render.Thousands(ckptRows)))

			// The table: every item up to the checkpoint; past it, only
			// items of rows read (ids ascend in reading order: one reader,
			// the lower shard first), never the bad row's.
			got := itemIDs(t, testenv.ScanItems(t, client, table))
			inTable := map[int]bool{}
			for _, id := range got {
				inTable[id] = true
			}
			for _, id := range covered {
				require.True(t, inTable[id], "row id=%d is checkpointed but has no item", id)
			}
			t.Logf("table: %d items, of rows up to id=%d", len(got), got[len(got)-1])
			require.NotContains(t, got, bad)
			require.LessOrEqual(t, got[len(got)-1], int(failed.Summary.Total.RowsRead), "no item of a row the run did not read")
			require.GreaterOrEqual(t, int64(len(got)), failed.Summary.Total.ItemsWritten, "every acknowledged item is in the table")

			// Fixed at the source, the rerun resumes from the checkpoint.
			testenv.ExecSQL(t, d.Name, dsn, fmt.Sprintf("UPDATE parts SET bin = 'B%02d' WHERE id = %d", bad%40, bad))
			proxy.SetLatency(0)
			r = clitest.Run(t, dir, nil, append(migrate, "--report", "resumed.json")...)
			require.Equal(t, exitOK, r.Code, r.Output())
			require.Regexp(t, fmt.Sprintf(`dynafold: resuming run %s from \.dynafold/%s\.checkpoint\.json: %s rows of (~[\d,]+|an unknown total) done`,
				failed.RunID, table, render.Thousands(ckptRows)), r.Stderr)
			resumed := readReport(t, filepath.Join(dir, "resumed.json"))
			require.True(t, resumed.Summary.Resumed)
			require.Equal(t, ckptRows, resumed.Summary.Total.ResumedRows, "the rows up to the checkpoint are not read again")
			require.EqualValues(t, rows-ckptRows, resumed.Summary.Total.RowsRead)
			require.EqualValues(t, rows, resumed.Summary.Total.CheckpointRows)

			fresh := testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, client, fresh)
			freshFlags := []string{"--config", config, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", fresh}
			r = clitest.Run(t, "", nil, append([]string{"table", "create"}, freshFlags...)...)
			require.Equal(t, exitOK, r.Code, r.Output())
			r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, freshFlags...)...)
			require.Equal(t, exitOK, r.Code, r.Output())
			want := testenv.ScanItems(t, client, fresh)
			require.Len(t, want, rows)
			require.Equal(t, want, testenv.ScanItems(t, client, table))
			r = clitest.Run(t, "", nil, append([]string{"verify", "--source-dsn", dsn}, common...)...)
			require.Equal(t, exitOK, r.Code, r.Output())
		})
	}
}
