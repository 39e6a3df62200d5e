package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
)

// incrementalEmptyCollection adds a portfolio 4 (a server and a database)
// stamped long before the watermark, so that the first run writes its
// collection and a later change can delete every row of it, and a
// portfolio 5 to rename.
var incrementalEmptyCollection = map[string]string{
	"postgres": `
		INSERT INTO portfolios (id, name, updated_at) VALUES (4, 'Dan''s Deli', '2025-01-01 00:00:00+00'), (5, 'Eve''s Eats', '2025-01-01 00:00:00+00');
		INSERT INTO servers (id, portfolio_id, hostname, updated_at) VALUES ('s4a', 4, 'dan-site', '2025-01-01 00:00:00+00');
		INSERT INTO databases (id, server_id, engine, updated_at) VALUES ('d9', 's4a', 'sqlite', '2025-01-01 00:00:00+00');
	`,
	"mysql": "INSERT INTO portfolios (id, name, updated_at) VALUES (4, 'Dan''s Deli', '2025-01-01 00:00:00'), (5, 'Eve''s Eats', '2025-01-01 00:00:00');" +
		"INSERT INTO servers (id, portfolio_id, hostname, updated_at) VALUES ('s4a', 4, 'dan-site', '2025-01-01 00:00:00');" +
		"INSERT INTO `databases` (id, server_id, engine, updated_at) VALUES ('d9', 's4a', 'sqlite', '2025-01-01 00:00:00');",
}

// incrementalNestChanges moves a nested contact to another portfolio,
// hard-deletes another, renames portfolio 5 and deletes every row of
// collection 4. PostgreSQL stamps the changed rows in the statement, MySQL
// by ON UPDATE CURRENT_TIMESTAMP: DATETIME(6) on contacts, DATETIME (whole
// seconds) on portfolios.
var incrementalNestChanges = map[string]string{
	"postgres": `
		UPDATE contacts SET portfolio_id = 3, updated_at = now() WHERE email = 'a@jeff.example';
		DELETE FROM contacts WHERE email = 'b@bob.example';
		UPDATE portfolios SET name = 'Eve''s Eatery', updated_at = now() WHERE id = 5;
		DELETE FROM databases WHERE id = 'd9';
		DELETE FROM servers WHERE id = 's4a';
		DELETE FROM portfolios WHERE id = 4;
	`,
	"mysql": "UPDATE contacts SET portfolio_id = 3 WHERE email = 'a@jeff.example';" +
		"DELETE FROM contacts WHERE email = 'b@bob.example';" +
		"UPDATE portfolios SET name = 'Eve''s Eatery' WHERE id = 5;" +
		"DELETE FROM `databases` WHERE id = 'd9'; DELETE FROM servers WHERE id = 's4a'; DELETE FROM portfolios WHERE id = 4;",
}

// TestMigrateIncrementalNestsAndEmptiedCollection: a nested child moved to
// another parent and one hard-deleted leave their old parents' items
// holding them, and a collection whose every row was deleted keeps its
// items, unless the incremental run finds them: the nest check rewrites
// the old parents, the key sweep (scanning the table's keys) deletes the
// emptied collection. The table then equals a fresh full migrate.
func TestMigrateIncrementalNestsAndEmptiedCollection(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			const config = "testdata/incremental/mapping.yaml"
			tg := newTarget(t, d, config, "testdata/incremental/"+d.Name+".sql")
			testenv.ExecSQL(t, d.Name, tg.dsn, incrementalEmptyCollection[d.Name])
			require.Equal(t, 0, tg.run(t, "", "table", "create").Code)
			dir := t.TempDir()
			rep := runIncremental(t, tg, dir)
			require.True(t, rep.Result.Full)
			require.EqualValues(t, 18, rep.Result.ItemsWritten) // 14 + portfolios 4 and 5, s4a, d9

			testenv.ExecSQL(t, d.Name, tg.dsn, incrementalNestChanges[d.Name])

			// The preview reads the nest-bearing portfolios in full: 1 (lost
			// a contact by a move), 2 (lost one by a delete), 3 (gained one)
			// and 5 (renamed) are to update; the three items of collection 4
			// to delete.
			for _, args := range [][]string{{"diff", "--incremental"}, {"migrate", "--incremental", "--dry-run"}} {
				r := tg.run(t, dir, append(args, "--output", "json")...)
				require.Equal(t, 3, r.Code, r.Output())
				var p struct {
					Write  int64 `json:"items_to_write"`
					Delete int64 `json:"items_to_delete"`
				}
				require.NoError(t, json.Unmarshal([]byte(r.Stdout), &p), r.Stdout)
				require.Equal(t, int64(4), p.Write, r.Stdout)
				require.Equal(t, int64(3), p.Delete, r.Stdout)
			}

			rep = runIncremental(t, tg, dir)
			require.False(t, rep.Result.Full)
			// The narrowed pass: portfolio 5 (renamed: its own stamp), 3 (its
			// new contact, and its own stamp at the watermark), s3a
			// (watermark), d1 (watermark), d6 and d7 (their server s3a).
			require.EqualValues(t, 6, rep.Result.RowsRederived)
			// The nest check compares portfolios 1, 2, 3, 5 and rewrites 1
			// and 2, which lost a contact without being stamped.
			require.EqualValues(t, 4, rep.Result.NestChecked)
			require.EqualValues(t, 2, rep.Result.NestRewritten)
			require.EqualValues(t, 8, rep.Result.ItemsWritten)
			// The key sweep reads the source's 15 rows by their key columns
			// (4 collections, none with other keys than last time) and
			// queries collection 4, which vanished, and 1, 2, 3 and 5, which
			// this run wrote: all the table's 18 keys. It deletes collection
			// 4's 3 items.
			require.EqualValues(t, 15, rep.Result.SweepRowsRead)
			require.Equal(t, "query", rep.Result.SweepMode)
			require.EqualValues(t, 4, rep.Result.Collections)
			require.EqualValues(t, 0, rep.Result.CollectionsChanged)
			require.EqualValues(t, 1, rep.Result.CollectionsVanished)
			require.EqualValues(t, 5, rep.Result.CollectionsQueried)
			require.EqualValues(t, 18, rep.Result.TargetKeysRead)
			require.EqualValues(t, 0, rep.Result.SweepKeysScanned)
			require.EqualValues(t, 3, rep.Result.Swept)
			require.EqualValues(t, 3, rep.Result.ItemsDeleted)
			requireSameAsFreshMigrate(t, tg, config)

			// Nothing changed since: the nest check rewrites nothing, the
			// sweep deletes nothing.
			rep = runIncremental(t, tg, dir)
			require.EqualValues(t, 0, rep.Result.NestRewritten)
			require.EqualValues(t, 0, rep.Result.ItemsDeleted)
		})
	}
}

// incrementalBulk adds n portfolios (from 101) of three servers with two
// databases each, stamped long before the watermark: 10 items each.
func incrementalBulk(driver string, n int) string {
	if driver == "postgres" {
		return fmt.Sprintf(`
			INSERT INTO portfolios (id, name, updated_at) SELECT p, 'P' || p, '2025-01-01 00:00:00+00' FROM generate_series(101, %[1]d) p;
			INSERT INTO servers (id, portfolio_id, hostname, updated_at)
				SELECT 'S' || p || 'n' || s, p, 'host', '2025-01-01 00:00:00+00' FROM generate_series(101, %[1]d) p, generate_series(1, 3) s;
			INSERT INTO databases (id, server_id, engine, updated_at)
				SELECT 'D' || p || 'n' || s || 'd' || d, 'S' || p || 'n' || s, 'pg', '2025-01-01 00:00:00+00'
				FROM generate_series(101, %[1]d) p, generate_series(1, 3) s, generate_series(1, 2) d;
			ANALYZE;`, 100+n)
	}
	return fmt.Sprintf("INSERT INTO portfolios (id, name, updated_at) SELECT seq, CONCAT('P', seq), '2025-01-01 00:00:00' FROM seq_101_to_%[1]d;"+
		"INSERT INTO servers (id, portfolio_id, hostname, updated_at) SELECT CONCAT('S', p.seq, 'n', s.seq), p.seq, 'host', '2025-01-01 00:00:00' FROM seq_101_to_%[1]d p, seq_1_to_3 s;"+
		"INSERT INTO `databases` (id, server_id, engine, updated_at) SELECT CONCAT('D', p.seq, 'n', s.seq, 'd', d.seq), CONCAT('S', p.seq, 'n', s.seq), 'my', '2025-01-01 00:00:00' FROM seq_101_to_%[1]d p, seq_1_to_3 s, seq_1_to_2 d;"+
		"ANALYZE TABLE portfolios, servers, `databases`;", 100+n)
}

// incrementalBulkChanges renames every bulk server (so every database item
// is rewritten too), moves and hard-deletes a few databases, moves a
// contact away from its portfolio and empties one collection.
var incrementalBulkChanges = map[string]string{
	"postgres": `
		UPDATE servers SET hostname = 'host-2', updated_at = now() WHERE portfolio_id > 100;
		UPDATE databases SET server_id = 'S102n1', updated_at = now() WHERE id IN ('D101n1d1', 'D103n2d2');
		DELETE FROM databases WHERE id IN ('D104n1d1', 'D105n3d2');
		UPDATE contacts SET portfolio_id = 3, updated_at = now() WHERE email = 'a@jeff.example';
		DELETE FROM databases WHERE server_id LIKE 'S106n%';
		DELETE FROM servers WHERE portfolio_id = 106;
		DELETE FROM portfolios WHERE id = 106;
	`,
	"mysql": "UPDATE servers SET hostname = 'host-2' WHERE portfolio_id > 100;" +
		"UPDATE `databases` SET server_id = 'S102n1' WHERE id IN ('D101n1d1', 'D103n2d2');" +
		"DELETE FROM `databases` WHERE id IN ('D104n1d1', 'D105n3d2');" +
		"UPDATE contacts SET portfolio_id = 3 WHERE email = 'a@jeff.example';" +
		"DELETE FROM `databases` WHERE server_id LIKE 'S106n%'; DELETE FROM servers WHERE portfolio_id = 106; DELETE FROM portfolios WHERE id = 106;",
}

// TestMigrateIncrementalKilledResumes kills an incremental run with SIGKILL
// once its checkpoint shows progress, while a write-rate cap keeps it
// going, and reruns it: the rerun resumes the pending bounds and the
// checkpoint, and the table converges to what a fresh full migrate writes.
func TestMigrateIncrementalKilledResumes(t *testing.T) {
	t.Parallel()
	// Portfolios of ten items each; the change rewrites nine of the ten.
	bulk := testenv.Size(400, 2000)
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			const config = "testdata/incremental/mapping.yaml"
			tg := newTarget(t, d, config, "testdata/incremental/"+d.Name+".sql")
			testenv.ExecSQL(t, d.Name, tg.dsn, incrementalBulk(d.Name, bulk))
			require.Equal(t, 0, tg.run(t, "", "table", "create").Code)
			dir := t.TempDir()
			first := runIncremental(t, tg, dir)
			require.True(t, first.Result.Full)
			testenv.ExecSQL(t, d.Name, tg.dsn, incrementalBulkChanges[d.Name])

			statePath := filepath.Join(dir, ".dynafold", tg.table+".incremental.json")
			ckpt := filepath.Join(dir, ".dynafold", tg.table+".incremental.changes.checkpoint.json")
			// 500 write units a second: the rewritten items take several
			// seconds; killed once the checkpoint holds a ninth of them.
			killWhen(t, dir, nil, func() bool {
				// Until this run replaces it, the file is the first run's,
				// complete.
				doc := readCheckpoint(ckpt)
				return !doc.Complete && doc.rows() >= int64(bulk)
			}, append([]string{"migrate", "--incremental", "--progress", "none", "--max-wcu", "500", "--checkpoint-every", "100ms"}, tg.flags...)...)
			b, err := os.ReadFile(statePath)
			require.NoError(t, err)
			var st struct {
				Watermarks map[string]string `json:"watermarks"`
				Pending    *struct {
					Since map[string]string `json:"since"`
				} `json:"pending"`
			}
			require.NoError(t, json.Unmarshal(b, &st))
			require.NotNil(t, st.Pending, "the killed run is pending")
			require.Equal(t, first.Result.Watermarks, st.Watermarks, "a killed run does not move the watermarks")

			path := filepath.Join(dir, "resumed.json")
			r := tg.run(t, dir, "migrate", "--incremental", "--progress", "none", "--report", path)
			require.Equal(t, 0, r.Code, r.Output())
			var rep struct {
				Summary struct {
					Resumed bool `json:"resumed"`
				} `json:"summary"`
				Result struct {
					Since           map[string]string `json:"since"`
					RowsRederived   int64             `json:"rows_rederived"`
					SweepMode       string            `json:"sweep_mode"`
					SweepScanReason string            `json:"sweep_scan_reason"`
				} `json:"result"`
			}
			b, err = os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &rep))
			require.True(t, rep.Summary.Resumed, "the rerun resumes the killed run's checkpoint")
			require.Equal(t, st.Pending.Since, rep.Result.Since, "with the killed run's bounds")
			// Uninterrupted, the run re-derives 9*bulk-5 rows: the renamed
			// servers' 3*bulk-3 (portfolio 106's are gone) and their
			// 6*bulk-8 databases, and the 6 rows at the watermark
			// (portfolios 2 and 3, s3a, d1, d6, d7).
			require.Less(t, rep.Result.RowsRederived, int64(9*bulk-5), "the rerun did not start over")
			// The killed run's writes are not among the collections the
			// digests or this run's trackers know: the sweep scans the table.
			require.Equal(t, "scan", rep.Result.SweepMode)
			require.Contains(t, rep.Result.SweepScanReason, "resumes")
			requireSameAsFreshMigrate(t, tg, config)
		})
	}
}
