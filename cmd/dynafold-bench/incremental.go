package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// The incremental scenario (issue 14's benchmark): the portfolio dataset
// with change columns, migrated in full into a dynalite of its own, then
// 0.1% of its rows changed and `migrate --incremental` run, with and
// without the key sweep. It reports each run's wall time and the source
// rows it read, against the full run's.

// incrementalChanges is the mapping's changes: block, appended to the
// portfolio mapping.
const incrementalChanges = `
changes:
  portfolios: {column: updated_at}
  servers:    {column: updated_at}
  databases:  {column: updated_at}
`

// incrementalRun is one measured run of the scenario.
type incrementalRun struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"wall_seconds"`
	// RowsRead is the rows the run's item pass read (re-derived rows for
	// an incremental run); SweepRows the rows the key sweep read, key
	// columns only; SweepMode how it read the table (scan: every key;
	// query: the collections whose keys changed or that the run wrote),
	// CollectionsQueried and KeysRead what it read of it.
	RowsRead           int64  `json:"source_rows_read"`
	SweepRows          int64  `json:"sweep_source_rows_read,omitempty"`
	SweepMode          string `json:"sweep_mode,omitempty"`
	CollectionsQueried int64  `json:"sweep_collections_queried,omitempty"`
	KeysRead           int64  `json:"sweep_table_keys_read,omitempty"`
	ItemsWritten       int64  `json:"items_written"`
	ItemsDeleted       int64  `json:"items_deleted,omitempty"`
	// SweepSeconds is the key sweep's share of Seconds.
	SweepSeconds float64 `json:"sweep_seconds,omitempty"`
	ShareOfFull  float64 `json:"wall_share_of_full,omitempty"`
}

// incrementalFigures is the scenario's part of the results.
type incrementalFigures struct {
	Items       int              `json:"items"`
	RowsChanged int64            `json:"rows_changed"`
	Runs        []incrementalRun `json:"runs"`
}

// incrementalReport is the part of dynafold's --report the scenario reads.
type incrementalReport struct {
	Summary struct {
		Total struct {
			RowsRead     int64 `json:"rows_read"`
			ItemsWritten int64 `json:"items_written"`
		} `json:"total"`
	} `json:"summary"`
	Result struct {
		RowsRederived int64  `json:"rows_rederived"`
		ItemsWritten  int64  `json:"items_written"`
		ItemsDeleted  int64  `json:"items_deleted"`
		SweepRows     int64  `json:"rows_read_sweep"`
		SweepMode     string `json:"sweep_mode"`
		Queried       int64  `json:"collections_queried"`
		KeysRead      int64  `json:"target_keys_read"`
		Sweep         *struct {
			Seconds float64 `json:"seconds"`
		} `json:"sweep"`
	} `json:"result"`
}

func incrementalScenario(ctx context.Context, o options, work, dynafold, config string) (*incrementalFigures, error) {
	dsn, err := generateIncremental(ctx, o.pgDSN, o.incrementalItems)
	if err != nil {
		return nil, err
	}
	base, err := os.ReadFile(config)
	if err != nil {
		return nil, err
	}
	mapping := filepath.Join(work, "incremental.yaml")
	if err := os.WriteFile(mapping, append(base, incrementalChanges...), 0o644); err != nil {
		return nil, err
	}
	dl, err := startServer(ctx, filepath.Join(work, "dynalite-incremental.log"), "node", filepath.Join(o.repo, "scripts", "dynalite.js"),
		"--host", "127.0.0.1", "--port", "{port}", "--createTableMs", "0")
	if err != nil {
		return nil, err
	}
	defer dl.stop()
	const table = "bench_incremental"
	if err := createTable(ctx, dynafold, mapping, dl.URL, table); err != nil {
		return nil, err
	}
	ckpt := filepath.Join(work, "incremental.checkpoint.json")
	runOne := func(name string, args ...string) (*incrementalRun, *incrementalReport, error) {
		path := filepath.Join(work, "incremental.report.json")
		args = append([]string{"migrate", "--config", mapping, "--endpoint", dl.URL, "--table", table, "--source-dsn", dsn,
			"--progress", "none", "--report", path, "--writers", strconv.Itoa(o.writers), "--concurrency", strconv.Itoa(o.readers)}, args...)
		m, err := runMeasured(ctx, nil, dynafold, args...)
		if err != nil {
			return nil, nil, err
		}
		var rep incrementalReport
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(data, &rep); err != nil {
			return nil, nil, err
		}
		fmt.Printf("incremental scenario: %s: %.1fs\n", name, m.Wall)
		return &incrementalRun{Name: name, Seconds: m.Wall}, &rep, nil
	}

	fig := &incrementalFigures{Items: o.incrementalItems}
	full, rep, err := runOne("full migrate", "--restart", "--checkpoint", filepath.Join(work, "full.checkpoint.json"))
	if err != nil {
		return nil, err
	}
	full.RowsRead, full.ItemsWritten = rep.Summary.Total.RowsRead, rep.Summary.Total.ItemsWritten
	fig.Runs = append(fig.Runs, *full)
	// The first incremental run has no state: a full run that records the
	// watermarks (and sweeps), measured for the record.
	first, rep, err := runOne("first migrate --incremental (no state: full)", "--incremental", "--restart", "--checkpoint", ckpt)
	if err != nil {
		return nil, err
	}
	fig.Runs = append(fig.Runs, fillRun(first, rep, full.Seconds))

	for _, v := range []struct {
		name  string
		extra []string
	}{
		{"migrate --incremental, 0.1% of rows changed", nil},
		{"migrate --incremental --full-sweep, 0.1% of rows changed", []string{"--full-sweep"}},
		{"migrate --incremental --no-deletes, 0.1% of rows changed", []string{"--no-deletes"}},
	} {
		// The same rows each time, so that the overlap window re-reads
		// nothing besides them.
		n, err := touchIncremental(ctx, dsn)
		if err != nil {
			return nil, err
		}
		fig.RowsChanged = n
		r, rep, err := runOne(v.name, append([]string{"--incremental", "--checkpoint", ckpt}, v.extra...)...)
		if err != nil {
			return nil, err
		}
		fig.Runs = append(fig.Runs, fillRun(r, rep, full.Seconds))
	}
	return fig, nil
}

func fillRun(r *incrementalRun, rep *incrementalReport, fullSeconds float64) incrementalRun {
	r.RowsRead = rep.Result.RowsRederived
	r.SweepRows, r.SweepMode = rep.Result.SweepRows, rep.Result.SweepMode
	r.CollectionsQueried, r.KeysRead = rep.Result.Queried, rep.Result.KeysRead
	r.ItemsWritten, r.ItemsDeleted = rep.Result.ItemsWritten, rep.Result.ItemsDeleted
	if rep.Result.Sweep != nil {
		r.SweepSeconds = rep.Result.Sweep.Seconds
	}
	if fullSeconds > 0 {
		r.ShareOfFull = r.Seconds / fullSeconds
	}
	return *r
}

// touchIncremental stamps 0.1% of every table's rows as changed: the
// portfolios whose id is 7 modulo 1000, and their servers and databases
// (a server's change also re-derives its databases, which are among them).
func touchIncremental(ctx context.Context, dsn string) (int64, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	for _, st := range []string{
		`UPDATE portfolios SET name = name || '.', updated_at = clock_timestamp() WHERE id % 1000 = 7`,
		`UPDATE servers SET updated_at = clock_timestamp() WHERE portfolio_id % 1000 = 7`,
		`UPDATE databases SET updated_at = clock_timestamp() WHERE server_id IN (SELECT id FROM servers WHERE portfolio_id % 1000 = 7)`,
	} {
		tag, err := conn.Exec(ctx, st)
		if err != nil {
			return 0, fmt.Errorf("changing rows: %w", err)
		}
		n += tag.RowsAffected()
	}
	return n, nil
}

// generateIncremental (re)creates database bench_incr_<items>: the
// portfolio dataset with an updated_at column (indexed) on every table,
// stamped long ago (portfolio 1's collection later than the rest). An existing database of the same size is
// reused.
func generateIncremental(ctx context.Context, serverDSN string, items int) (string, error) {
	portfolios := items / itemsPerPortfolio
	return generateDatabase(ctx, serverDSN, fmt.Sprintf("bench_incr_%d", portfolios*itemsPerPortfolio), portfolios, fmt.Sprintf(`
CREATE TABLE portfolios (id integer PRIMARY KEY, name text NOT NULL, updated_at timestamptz NOT NULL);
CREATE TABLE servers (id varchar(64) PRIMARY KEY, portfolio_id integer NOT NULL REFERENCES portfolios (id), updated_at timestamptz NOT NULL);
CREATE TABLE databases (id varchar(64) PRIMARY KEY, server_id varchar(64) NOT NULL REFERENCES servers (id), updated_at timestamptz NOT NULL);
INSERT INTO portfolios SELECT p, 'Portfolio ' || p, '2025-01-01 00:00:00+00' FROM generate_series(1, %[1]d) p;
INSERT INTO servers SELECT 'Srv' || p || 'n' || s, p, '2025-01-01 00:00:00+00' FROM generate_series(1, %[1]d) p, generate_series(1, 3) s;
INSERT INTO databases SELECT 'Db' || p || 'n' || s || 'd' || d, 'Srv' || p || 'n' || s, '2025-01-01 00:00:00+00'
  FROM generate_series(1, %[1]d) p, generate_series(1, 3) s, generate_series(1, 2) d;
-- The newest stamp of each table is portfolio 1's collection alone, so that
-- the overlap window before the first watermark holds 10 rows, not all.
UPDATE portfolios SET updated_at = '2025-06-01 00:00:00+00' WHERE id = 1;
UPDATE servers SET updated_at = '2025-06-01 00:00:00+00' WHERE portfolio_id = 1;
UPDATE databases SET updated_at = '2025-06-01 00:00:00+00' WHERE server_id LIKE 'Srv1n%%';
CREATE INDEX ON servers (portfolio_id);
CREATE INDEX ON databases (server_id);
CREATE INDEX ON portfolios (updated_at);
CREATE INDEX ON servers (updated_at);
CREATE INDEX ON databases (updated_at);
ANALYZE;`, portfolios))
}

// printIncremental prints the scenario's table.
func printIncremental(f *incrementalFigures) {
	fmt.Printf("\nincremental runs (%s items, %d rows changed, dynalite):\n", human(f.Items), f.RowsChanged)
	fmt.Printf("%-58s %9s %8s %10s %11s %6s %11s %11s %9s %9s %8s\n", "RUN", "WALL S", "SWEEP S", "ROWS READ", "SWEEP ROWS", "SWEEP", "COLLECTIONS", "TABLE KEYS", "WRITTEN", "DELETED", "OF FULL")
	for _, r := range f.Runs {
		share := "-"
		if r.ShareOfFull > 0 {
			share = fmt.Sprintf("%.1f%%", 100*r.ShareOfFull)
		}
		fmt.Printf("%-58s %9.1f %8.1f %10d %11d %6s %11d %11d %9d %9d %8s\n", r.Name, r.Seconds, r.SweepSeconds, r.RowsRead, r.SweepRows, r.SweepMode, r.CollectionsQueried, r.KeysRead, r.ItemsWritten, r.ItemsDeleted, share)
	}
}
