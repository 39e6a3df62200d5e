package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// incrementalReport is the part of migrate --incremental's --report the
// tests read.
type incrementalReport struct {
	ExitCode int `json:"exit_code"`
	Result   struct {
		Full          bool  `json:"full"`
		RowsRederived int64 `json:"rows_rederived"`
		ItemsWritten  int64 `json:"items_written"`
		ItemsDeleted  int64 `json:"items_deleted"`
		SoftDeleted   int64 `json:"items_deleted_soft"`
		Swept         int64 `json:"items_deleted_sweep"`
		NestChecked   int64 `json:"items_compared_nest_check"`
		NestRewritten int64 `json:"items_written_nest_check"`
		SweepRowsRead int64 `json:"rows_read_sweep"`
		// SweepKeysScanned is every key of the table the sweep read.
		SweepKeysScanned int64 `json:"target_keys_scanned"`
		// The sweep's target side: "scan" or "query", and what it read.
		SweepMode           string            `json:"sweep_mode"`
		SweepScanReason     string            `json:"sweep_scan_reason"`
		CollectionsQueried  int64             `json:"collections_queried"`
		TargetKeysRead      int64             `json:"target_keys_read"`
		Collections         int64             `json:"collections"`
		CollectionsChanged  int64             `json:"collections_changed"`
		CollectionsVanished int64             `json:"collections_vanished"`
		ReadInFull          []string          `json:"entities_read_in_full"`
		Since               map[string]string `json:"since"`
		Watermarks          map[string]string `json:"watermarks"`
	} `json:"result"`
}

func runIncremental(t *testing.T, tg *target, dir string, args ...string) incrementalReport {
	t.Helper()
	path := filepath.Join(dir, "report.json")
	r := tg.run(t, dir, append([]string{"migrate", "--incremental", "--progress", "none", "--report", path}, args...)...)
	require.Equal(t, 0, r.Code, r.Output())
	t.Logf("migrate --incremental:\n%s", r.Stdout)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep incrementalReport
	require.NoError(t, json.Unmarshal(b, &rep))
	return rep
}

// incrementalChanges changes a sample of rows of the example, per engine.
// PostgreSQL sets updated_at in each statement; MySQL's ON UPDATE
// CURRENT_TIMESTAMP(6) does it, except for the row stamped by hand.
var incrementalChanges = map[string]string{
	"postgres": `
		-- a parent rename that fans out to its databases' items
		UPDATE servers SET hostname = 'jeff-site-2', updated_at = now() WHERE id = 's1a';
		-- a child moved to another parent (and collection)
		UPDATE databases SET server_id = 's2a', updated_at = now() WHERE id = 'd3';
		-- a primary-key change
		UPDATE databases SET id = 'd6x', updated_at = now() WHERE id = 'd6';
		-- a hard delete
		DELETE FROM databases WHERE id = 'd7';
		-- a soft delete
		UPDATE databases SET deleted_at = now(), updated_at = now() WHERE id = 'd5';
		-- an insert
		INSERT INTO databases (id, server_id, engine) VALUES ('d8', 's2a', 'sqlite');
		-- a new nested child
		INSERT INTO contacts (portfolio_id, email) VALUES (1, 'c@jeff.example');
		-- committed late, inside the overlap window: stamped two minutes
		-- before the recorded watermark
		UPDATE databases SET engine = 'late', updated_at = '2025-01-01 00:58:00+00' WHERE id = 'd4';
	`,
	"mysql": `
		UPDATE servers SET hostname = 'jeff-site-2' WHERE id = 's1a';
		UPDATE ` + "`databases`" + ` SET server_id = 's2a' WHERE id = 'd3';
		UPDATE ` + "`databases`" + ` SET id = 'd6x' WHERE id = 'd6';
		DELETE FROM ` + "`databases`" + ` WHERE id = 'd7';
		UPDATE ` + "`databases`" + ` SET deleted_at = NOW(6) WHERE id = 'd5';
		INSERT INTO ` + "`databases`" + ` (id, server_id, engine) VALUES ('d8', 's2a', 'sqlite');
		INSERT INTO contacts (portfolio_id, email) VALUES (1, 'c@jeff.example');
		UPDATE ` + "`databases`" + ` SET engine = 'late', updated_at = '2025-01-01 00:58:00' WHERE id = 'd4';
	`,
}

// The watermark of databases after the first run, as each engine prints
// it, and the bound of the second run (minus the 5-minute overlap).
var (
	wantWatermark = map[string]string{"postgres": "2025-01-01 01:00:00+00", "mysql": "2025-01-01 01:00:00.000000"}
	wantSince     = map[string]string{"postgres": "2025-01-01 00:55:00+00:00", "mysql": "2025-01-01 00:55:00"}
)

// TestMigrateIncremental loads the change-tracked portfolio example, runs
// a first (full) incremental migrate, changes a sample of rows, and checks
// that the incremental run writes and deletes exactly the affected items
// and converges to what a fresh full migrate writes.
func TestMigrateIncremental(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			const config = "testdata/incremental/mapping.yaml"
			tg := newTarget(t, d, config, "testdata/incremental/"+d.Name+".sql")
			r := tg.run(t, "", "table", "create")
			require.Equal(t, 0, r.Code, r.Output())
			dir := t.TempDir()

			r = tg.run(t, "", "plan", "--no-target")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "INCREMENTAL RUNS")
			require.Contains(t, r.Stdout, "database: incremental (own databases: updated_at, soft delete deleted_at; join servers: updated_at)")
			require.Contains(t, r.Stdout, "portfolio: incremental (own portfolios: updated_at; nest contacts: updated_at)")

			// No state: a full run that records the watermarks.
			rep := runIncremental(t, tg, dir)
			require.True(t, rep.Result.Full)
			require.EqualValues(t, 14, rep.Result.ItemsWritten)
			require.EqualValues(t, 0, rep.Result.ItemsDeleted)
			require.Equal(t, wantWatermark[d.Name], rep.Result.Watermarks["databases"])
			require.FileExists(t, filepath.Join(dir, ".dynafold", tg.table+".incremental.json"))

			testenv.ExecSQL(t, d.Name, tg.dsn, incrementalChanges[d.Name])

			// The previews write nothing and agree with the run: 3 items to
			// create (d3 in its new collection, d6x, d8), 5 to update
			// (portfolio 1, s1a, d1, d2, d4), 4 stale (d3's old item, d5, d6,
			// d7); the rest of the re-derived items are unchanged.
			state, err := os.ReadFile(filepath.Join(dir, ".dynafold", tg.table+".incremental.json"))
			require.NoError(t, err)
			for _, args := range [][]string{{"diff", "--incremental"}, {"migrate", "--incremental", "--dry-run"}} {
				r = tg.run(t, dir, append(args, "--output", "json")...)
				require.Equal(t, 3, r.Code, r.Output())
				var p struct {
					Write  int64 `json:"items_to_write"`
					Delete int64 `json:"items_to_delete"`
				}
				require.NoError(t, json.Unmarshal([]byte(r.Stdout), &p), r.Stdout)
				require.Equal(t, int64(8), p.Write, r.Stdout)
				require.Equal(t, int64(4), p.Delete, r.Stdout)
			}
			after, err := os.ReadFile(filepath.Join(dir, ".dynafold", tg.table+".incremental.json"))
			require.NoError(t, err)
			require.Equal(t, string(state), string(after), "a preview leaves the incremental state alone")

			rep = runIncremental(t, tg, dir)
			require.False(t, rep.Result.Full)
			require.Empty(t, rep.Result.ReadInFull)
			// Written: portfolios 1 (new contact), 2 (its contact holds the
			// watermark), 3 (holds the watermark); servers s1a (renamed),
			// s3a (watermark); databases d1, d2 (s1a renamed), d3 (moved),
			// d4 (late), d6x (new key), d8 (inserted).
			require.EqualValues(t, 11, rep.Result.ItemsWritten)
			require.EqualValues(t, 11, rep.Result.RowsRederived)
			// Deleted: d5 (soft); d3's old item, d6, d7 (sweep).
			require.EqualValues(t, 1, rep.Result.SoftDeleted)
			require.EqualValues(t, 3, rep.Result.Swept)
			require.EqualValues(t, 4, rep.Result.ItemsDeleted)
			require.Equal(t, wantSince[d.Name], rep.Result.Since["databases"])

			requireSameAsFreshMigrate(t, tg, config)

			// --no-deletes applies soft deletes but skips the sweep, so a
			// hard-deleted row's item stays until a run with the sweep.
			testenv.ExecSQL(t, d.Name, tg.dsn, incrementalDeletes[d.Name])
			rep = runIncremental(t, tg, dir, "--no-deletes")
			// d4, and d5 again: it was soft-deleted inside the overlap
			// window of the last watermark (deleting an absent key is a
			// no-op, but it is a delete request and counted).
			require.EqualValues(t, 2, rep.Result.SoftDeleted)
			require.EqualValues(t, 0, rep.Result.Swept)
			rep = runIncremental(t, tg, dir)
			require.EqualValues(t, 1, rep.Result.Swept)
			requireSameAsFreshMigrate(t, tg, config)
		})
	}
}

// incrementalDeletes soft-deletes d4 and hard-deletes d8.
var incrementalDeletes = map[string]string{
	"postgres": `
		UPDATE databases SET deleted_at = now(), updated_at = now() WHERE id = 'd4';
		DELETE FROM databases WHERE id = 'd8';
	`,
	"mysql": "UPDATE `databases` SET deleted_at = NOW(6) WHERE id = 'd4'; DELETE FROM `databases` WHERE id = 'd8';",
}

func TestMigrateIncrementalFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"migrate", "--overlap", "1m"},
		{"migrate", "--no-deletes"},
		{"migrate", "--incremental", "--overlap", "-1m"},
		{"migrate", "--incremental", "--prune"},
	} {
		r := clitest.Run(t, "", nil, append(args, "--config", clitest.RepoPath("testdata/incremental/mapping.yaml"), "--source-dsn", "postgres://nobody@127.0.0.1:1/none")...)
		require.Equal(t, 2, r.Code, "%v: %s", args, r.Output())
	}
}

// requireSameAsFreshMigrate compares the table with a fresh full migrate
// of the source as it is now, and runs verify.
func requireSameAsFreshMigrate(t *testing.T, tg *target, config string) {
	t.Helper()
	fresh := testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, tg.client, fresh)
	flags := []string{"--config", clitest.RepoPath(config), "--source-dsn", tg.dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", fresh}
	r := clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	r = clitest.Run(t, t.TempDir(), nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	want := testenv.ScanItems(t, tg.client, fresh)
	got := testenv.ScanItems(t, tg.client, tg.table)
	require.NotEmpty(t, want)
	if diff := diffLines(want, got); diff != "" {
		t.Fatalf("the incrementally migrated table differs from a fresh migrate (%d items against %d):\n%s", len(got), len(want), diff)
	}
	r = tg.run(t, "", "verify")
	require.Equal(t, 0, r.Code, r.Output())
}

// An incremental run that fails part way leaves the watermarks where they
// were and its bounds pending; the next run resumes with the same bounds
// and converges. (PostgreSQL only: the failing row is an item over 400 KB,
// which the MySQL example's columns cannot hold.)
func TestMigrateIncrementalFailureKeepsWatermarks(t *testing.T) {
	t.Parallel()
	const config = "testdata/incremental/mapping.yaml"
	d := testenv.Drivers()[0]
	require.Equal(t, "postgres", d.Name)
	tg := newTarget(t, d, config, "testdata/incremental/postgres.sql")
	require.Equal(t, 0, tg.run(t, "", "table", "create").Code)
	dir := t.TempDir()
	first := runIncremental(t, tg, dir)
	statePath := filepath.Join(dir, ".dynafold", tg.table+".incremental.json")

	testenv.ExecSQL(t, d.Name, tg.dsn, `
		UPDATE servers SET hostname = 'jeff-site-2', updated_at = now() WHERE id = 's1a';
		UPDATE databases SET engine = repeat('x', 500000), updated_at = now() WHERE id = 'd2';
	`)
	r := tg.run(t, dir, "migrate", "--incremental", "--progress", "none")
	require.Equal(t, 1, r.Code, r.Output())
	require.Contains(t, r.Stderr, "d2")
	var st struct {
		Watermarks map[string]string `json:"watermarks"`
		Pending    *struct {
			Since map[string]string `json:"since"`
		} `json:"pending"`
	}
	b, err := os.ReadFile(statePath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &st))
	require.Equal(t, first.Result.Watermarks, st.Watermarks, "a failed run must not move the watermarks")
	require.NotNil(t, st.Pending)
	require.Equal(t, "2025-01-01 00:55:00+00:00", st.Pending.Since["servers"])

	testenv.ExecSQL(t, d.Name, tg.dsn, `UPDATE databases SET engine = 'fixed', updated_at = now() WHERE id = 'd2';`)
	rep := runIncremental(t, tg, dir)
	require.Equal(t, st.Pending.Since, rep.Result.Since, "the rerun resumes the pending bounds")
	require.NotEqual(t, first.Result.Watermarks["servers"], rep.Result.Watermarks["servers"])
	b, err = os.ReadFile(statePath)
	require.NoError(t, err)
	require.NotContains(t, string(b), `"pending"`)
	requireSameAsFreshMigrate(t, tg, config)
}

// incrementalOnlyCollection3Recent stamps every row long before the
// watermark except those of collection 3 (portfolio 3, s3a, d6, d7, and a
// contact of portfolio 3 it adds), so that the overlap window re-derives
// only collection 3's items.
var incrementalOnlyCollection3Recent = map[string]string{
	"postgres": `
		UPDATE portfolios SET updated_at = '2024-01-01 00:00:00+00' WHERE id <> 3;
		UPDATE servers SET updated_at = '2024-01-01 00:00:00+00' WHERE id <> 's3a';
		UPDATE databases SET updated_at = '2024-01-01 00:00:00+00' WHERE server_id <> 's3a';
		UPDATE contacts SET updated_at = '2024-01-01 00:00:00+00';
		INSERT INTO contacts (portfolio_id, email, updated_at) VALUES (3, 'c@ann.example', '2025-01-01 01:00:00+00');
	`,
	"mysql": `
		UPDATE portfolios SET updated_at = '2024-01-01 00:00:00' WHERE id <> 3;
		UPDATE servers SET updated_at = '2024-01-01 00:00:00' WHERE id <> 's3a';
		UPDATE ` + "`databases`" + ` SET updated_at = '2024-01-01 00:00:00' WHERE server_id <> 's3a';
		UPDATE contacts SET updated_at = '2024-01-01 00:00:00';
		INSERT INTO contacts (portfolio_id, email, updated_at) VALUES (3, 'c@ann.example', '2025-01-01 01:00:00');
	`,
}

// incrementalEmptyCollection2 deletes every row that makes collection 2.
var incrementalEmptyCollection2 = map[string]string{
	"postgres": `
		DELETE FROM contacts WHERE portfolio_id = 2;
		DELETE FROM databases WHERE server_id = 's2a';
		DELETE FROM servers WHERE portfolio_id = 2;
		DELETE FROM portfolios WHERE id = 2;
	`,
	"mysql": `
		DELETE FROM contacts WHERE portfolio_id = 2;
		DELETE FROM ` + "`databases`" + ` WHERE server_id = 's2a';
		DELETE FROM servers WHERE portfolio_id = 2;
		DELETE FROM portfolios WHERE id = 2;
	`,
}

// TestMigrateIncrementalDigestSweep checks that the key sweep reads of the
// table only the collections whose keys changed, vanished or were written
// by the run, once a successful sweep has recorded the collections'
// digests; and that it falls back to scanning the table when it has none.
// The example's collections are portfolios 1 (6 items), 2 (4) and 3 (4).
func TestMigrateIncrementalDigestSweep(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			const config = "testdata/incremental/mapping.yaml"
			tg := newTarget(t, d, config, "testdata/incremental/"+d.Name+".sql")
			testenv.ExecSQL(t, d.Name, tg.dsn, incrementalOnlyCollection3Recent[d.Name])
			require.Equal(t, 0, tg.run(t, "", "table", "create").Code)
			dir := t.TempDir()
			digests := filepath.Join(dir, ".dynafold", tg.table+".incremental.digests")

			// No state: the sweep scans the table and records 3 digests.
			rep := runIncremental(t, tg, dir)
			require.True(t, rep.Result.Full)
			require.Equal(t, "scan", rep.Result.SweepMode)
			require.EqualValues(t, 14, rep.Result.SweepKeysScanned)
			require.EqualValues(t, 3, rep.Result.Collections)
			require.FileExists(t, digests)

			// A hard delete in collection 1: its key set changed, so it is
			// queried (6 keys, d1 stale); collection 3 is queried because
			// the overlap window re-derived and wrote it (4 keys);
			// collection 2 is not read at all.
			testenv.ExecSQL(t, d.Name, tg.dsn, "DELETE FROM "+quoteTable(d.Name, "databases")+" WHERE id = 'd1'")
			rep = runIncremental(t, tg, dir)
			require.False(t, rep.Result.Full)
			require.EqualValues(t, 4, rep.Result.ItemsWritten, "collection 3's items, re-derived in the overlap window")
			require.Equal(t, "query", rep.Result.SweepMode, rep.Result.SweepScanReason)
			require.EqualValues(t, 3, rep.Result.Collections)
			require.EqualValues(t, 1, rep.Result.CollectionsChanged)
			require.EqualValues(t, 0, rep.Result.CollectionsVanished)
			require.EqualValues(t, 2, rep.Result.CollectionsQueried)
			require.EqualValues(t, 10, rep.Result.TargetKeysRead)
			require.EqualValues(t, 0, rep.Result.SweepKeysScanned)
			require.EqualValues(t, 1, rep.Result.Swept)
			requireSameAsFreshMigrate(t, tg, config)

			// Every row of collection 2 deleted: the collection vanished
			// from the digests and is still swept (its 4 items), with
			// collection 3 (written again).
			testenv.ExecSQL(t, d.Name, tg.dsn, incrementalEmptyCollection2[d.Name])
			rep = runIncremental(t, tg, dir)
			require.Equal(t, "query", rep.Result.SweepMode, rep.Result.SweepScanReason)
			require.EqualValues(t, 2, rep.Result.Collections)
			require.EqualValues(t, 0, rep.Result.CollectionsChanged)
			require.EqualValues(t, 1, rep.Result.CollectionsVanished)
			require.EqualValues(t, 2, rep.Result.CollectionsQueried)
			require.EqualValues(t, 8, rep.Result.TargetKeysRead)
			require.EqualValues(t, 4, rep.Result.Swept)
			requireSameAsFreshMigrate(t, tg, config)

			// --full-sweep scans; so does the first run after a full
			// migrate through the same checkpoint, which discards the
			// digests (it writes without a sweep).
			rep = runIncremental(t, tg, dir, "--full-sweep")
			require.Equal(t, "scan", rep.Result.SweepMode)
			require.EqualValues(t, 9, rep.Result.SweepKeysScanned)
			r := tg.run(t, dir, "migrate", "--progress", "none")
			require.Equal(t, 0, r.Code, r.Output())
			require.NoFileExists(t, digests)
			rep = runIncremental(t, tg, dir)
			require.Equal(t, "scan", rep.Result.SweepMode)
			require.Contains(t, rep.Result.SweepScanReason, "no collection digests")
			require.FileExists(t, digests)
		})
	}
}

func quoteTable(driver, name string) string {
	if driver == "mysql" {
		return "`" + name + "`"
	}
	return name
}
