package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/sink"
)

// The shadow-comparison benchmark (issue 42, docs/shadow.md): sync of the
// portfolio design into a DynamoDB-compatible server under a steady churn,
// in alternating runs without and with --shadow-patterns. It reports the
// comparisons a minute, the mismatches (under churn, every one is a false
// positive) and skipped comparisons, and sync's apply rate and lag in both
// modes.

// shadowOptions of the shadow-comparison benchmark.
type shadowOptions struct {
	bin, repo, pgDSN, mysqlDSN, endpoint, out string
	// database names the source database and, with the engine, the table.
	database   string
	rate       int
	conns      int
	duration   time.Duration
	shadowRate float64
	portfolios int
	pairs      int
	writers    int
}

// shadowResults is the benchmark's JSON.
type shadowResults struct {
	Date    time.Time       `json:"date"`
	Command string          `json:"command"`
	Sources []*shadowSource `json:"sources"`
}

// shadowSource is one source engine's runs and what they add up to.
type shadowSource struct {
	Source     string  `json:"source"`
	TargetRate int     `json:"target_changes_per_second"`
	Seconds    int     `json:"seconds_per_run"`
	ShadowRate float64 `json:"shadow_rate"`
	Portfolios int     `json:"portfolios"`
	Items      int     `json:"items"`
	// Over the runs with --shadow-patterns, while the churn committed.
	ComparisonsPerMinute float64 `json:"comparisons_per_minute"`
	Comparisons          int64   `json:"comparisons"`
	Mismatches           int64   `json:"mismatches"`
	Skipped              int64   `json:"skipped"`
	// Changes applied per second while the churn committed, median over
	// the runs of each mode, and on / off.
	ApplyRateOff float64 `json:"apply_rate_shadow_off"`
	ApplyRateOn  float64 `json:"apply_rate_shadow_on"`
	ApplyRatio   float64 `json:"apply_rate_ratio"`
	// Commit-to-acknowledged lag, median of the runs' p99 and the largest.
	P99LagOff float64      `json:"p99_lag_seconds_shadow_off"`
	P99LagOn  float64      `json:"p99_lag_seconds_shadow_on"`
	MaxLagOff float64      `json:"max_lag_seconds_shadow_off"`
	MaxLagOn  float64      `json:"max_lag_seconds_shadow_on"`
	Runs      []*shadowRun `json:"runs"`
}

// shadowRun is one sync under the churn, with or without the comparison.
type shadowRun struct {
	Shadow bool `json:"shadow"`
	// Seconds is the churn's: from the first commit to the last.
	Seconds     float64                  `json:"seconds"`
	Applied     int64                    `json:"changes_applied"`
	ApplyRate   float64                  `json:"changes_applied_per_second"`
	Comparisons int64                    `json:"comparisons"`
	Mismatches  int64                    `json:"mismatches"`
	Skipped     int64                    `json:"skipped"`
	Patterns    map[string]*shadowCounts `json:"patterns,omitempty"`
	Lag         *lagResult               `json:"lag"`
	// MismatchLog is sync's log line of each mismatch (the first
	// maxMismatchLines): the pattern, the parameters, both answers and the
	// two queries.
	MismatchLog []json.RawMessage `json:"mismatch_log,omitempty"`
}

// maxMismatchLines is how many of a run's mismatch log lines the results
// keep.
const maxMismatchLines = 20

// shadowCounts are one pattern's counters over a run's churn.
type shadowCounts struct {
	Comparisons int64 `json:"comparisons"`
	Mismatches  int64 `json:"mismatches"`
	Skipped     int64 `json:"skipped"`
}

func shadowBenchCommand() *cobra.Command {
	o := shadowOptions{}
	cmd := &cobra.Command{
		Use:   "shadow",
		Short: "Measure the continuous shadow comparison: comparisons a minute and false positives under churn, and sync's apply rate and lag with and without it",
		RunE:  func(cmd *cobra.Command, _ []string) error { return shadowBench(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.bin, "bin", "bin", "directory with the dynafold binary")
	f.StringVar(&o.repo, "repo", ".", "repository root")
	f.StringVar(&o.pgDSN, "pg-dsn", os.Getenv("DYNAFOLD_TEST_PG_DSN"), "PostgreSQL server DSN (wal_level=logical); empty to skip")
	f.StringVar(&o.mysqlDSN, "mysql-dsn", os.Getenv("DYNAFOLD_TEST_MYSQL_DSN"), "MariaDB/MySQL server DSN (row-based binlog); empty to skip")
	f.StringVar(&o.endpoint, "endpoint", os.Getenv("DYNAFOLD_TEST_DYNAMODB_ENDPOINT"), "DynamoDB-compatible endpoint the design is synced into (dynalite): the comparison reads it back, so not the no-op endpoint")
	f.StringVar(&o.database, "database", "bench_shadow", "source database to create, and table name prefix (the engine is appended)")
	f.IntVar(&o.rate, "rate", 1000, "source changes per second committed while sync runs (each moves a database to another server of its portfolio)")
	f.IntVar(&o.conns, "conns", 4, "sessions committing the changes")
	f.DurationVar(&o.duration, "duration", 10*time.Minute, "length of each run's churn")
	f.Float64Var(&o.shadowRate, "shadow-rate", 20, "dynafold sync --shadow-rate in the runs with the comparison")
	f.IntVar(&o.portfolios, "portfolios", 1000, "portfolios of the dataset (3 servers, 6 databases, 10 items each); --rate × --duration must be a multiple of 3 × --portfolios")
	f.IntVar(&o.pairs, "pairs", 1, "pairs of runs, without the comparison then with it")
	f.IntVar(&o.writers, "writers", 8, "dynafold --writers")
	f.StringVar(&o.out, "out", "bench-results", "directory for the JSON results")
	return cmd
}

func shadowBench(ctx context.Context, o shadowOptions) error {
	var dbs []syncDB
	if o.pgDSN != "" {
		dbs = append(dbs, pgBench{server: o.pgDSN})
	}
	if o.mysqlDSN != "" {
		dbs = append(dbs, myBench{server: o.mysqlDSN})
	}
	if len(dbs) == 0 {
		return fmt.Errorf("no source: pass --pg-dsn or --mysql-dsn (or set DYNAFOLD_TEST_PG_DSN, DYNAFOLD_TEST_MYSQL_DSN)")
	}
	if o.endpoint == "" {
		return fmt.Errorf("no DynamoDB endpoint: pass --endpoint (or set DYNAFOLD_TEST_DYNAMODB_ENDPOINT)")
	}
	seconds := int(o.duration / time.Second)
	if o.rate <= 0 || seconds <= 0 || o.portfolios <= 0 || o.pairs <= 0 || o.shadowRate <= 0 {
		return fmt.Errorf("--rate, --duration (at least 1s), --portfolios, --pairs and --shadow-rate must be positive")
	}
	// Each commit moves the next portfolio's database on to its next
	// server; a run that moves every one round its three servers leaves
	// the rows as it found them, so that every run starts alike and every
	// commit of the next changes its row (MariaDB logs nothing for an
	// update that changes nothing).
	if total := o.rate * seconds; total%(3*o.portfolios) != 0 {
		return fmt.Errorf("--rate × --duration is %d changes, not a multiple of 3 × --portfolios (%d): each run must move every portfolio's database round its three servers", total, 3*o.portfolios)
	}
	work, err := os.MkdirTemp("", "dynafold-shadowbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	res := &shadowResults{Date: time.Now().UTC(), Command: "dynafold-bench " + strings.Join(os.Args[1:], " ")}
	var failed error
	for _, db := range dbs {
		s, err := shadowBenchOne(ctx, o, db, work)
		if err != nil {
			return fmt.Errorf("%s: %w", db.name(), err)
		}
		res.Sources = append(res.Sources, s)
		if s.Mismatches > 0 && failed == nil {
			failed = fmt.Errorf("%s: %d mismatches under churn: false positives (sync's log has each)", db.name(), s.Mismatches)
		}
	}
	printShadow(res)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	path := filepath.Join(o.out, "shadow-"+res.Date.Format("20060102-150405")+".json")
	fmt.Println("saved", path)
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return failed
}

// shadowBenchOne loads the design from one engine and runs the pairs.
func shadowBenchOne(ctx context.Context, o shadowOptions, db syncDB, work string) (*shadowSource, error) {
	dsn, err := db.create(ctx, o.database, o.portfolios, 3, 2)
	if err != nil {
		return nil, err
	}
	so := syncOptions{bin: o.bin, repo: o.repo, portfolios: o.portfolios, writers: o.writers,
		lagRate: o.rate, lagConns: o.conns, lagSeconds: int(o.duration / time.Second)}
	table := o.database + "_" + db.short()
	r, err := newSyncRun(so, db, filepath.Join(o.bin, "dynafold"), filepath.Join(o.repo, "testdata", "sync", "portfolios-shadow.yaml"), o.endpoint, dsn, table, work)
	if err != nil {
		return nil, err
	}
	defer func() {
		// Drop the slot (a forgotten one keeps WAL on the server) and the
		// table (the endpoint is shared).
		_, _ = runMeasured(context.WithoutCancel(ctx), nil, r.dynafold, append([]string{"sync", "cleanup", "--config", r.config, "--endpoint", r.endpoint,
			"--table", r.table, "--source-dsn", r.syncDSN}, r.stateFlags()...)...)
		if c, err := sink.NewClient(context.WithoutCancel(ctx), sink.ClientOptions{Endpoint: o.endpoint}); err == nil {
			_, _ = c.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: &table})
		}
	}()
	if err := r.prepare(ctx); err != nil {
		return nil, err
	}
	s := &shadowSource{Source: db.name(), TargetRate: o.rate, Seconds: so.lagSeconds, ShadowRate: o.shadowRate,
		Portfolios: o.portfolios, Items: o.portfolios * 10}
	for i := 0; i < 2*o.pairs; i++ {
		if err := db.settle(ctx, dsn); err != nil {
			return nil, err
		}
		run, err := shadowOnce(ctx, r, o, i%2 == 1)
		if err != nil {
			return nil, err
		}
		fmt.Printf("%s, shadow %s: %.0f changes applied/s, lag p99 %.2fs max %.2fs; %d comparisons, %d mismatches, %d skipped\n",
			db.name(), onOff(run.Shadow), run.ApplyRate, run.Lag.P99Lag, run.Lag.MaxLag, run.Comparisons, run.Mismatches, run.Skipped)
		s.Runs = append(s.Runs, run)
		if run.Mismatches > 0 {
			// The whole log, for the rounds and lag around each mismatch.
			if err := keepLog(run.Lag.log, filepath.Join(o.out, fmt.Sprintf("shadow-%s-run%d.log", db.short(), i+1))); err != nil {
				return nil, err
			}
		}
	}
	summarise(s)
	return s, nil
}

// shadowOnce runs sync under the churn once, scraping its metrics as the
// churn starts and as it ends.
func shadowOnce(ctx context.Context, r *syncRun, o shadowOptions, shadow bool) (*shadowRun, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	extra := []string{"--metrics-addr", addr}
	if shadow {
		extra = append(extra, "--shadow-patterns", "--shadow-rate", strconv.FormatFloat(o.shadowRate, 'g', -1, 64))
	}
	var before, after map[string]float64
	var from, to time.Time
	hooks := lagHooks{
		committing: func() (err error) { before, err = testenv.Scrape(addr); from = time.Now(); return err },
		committed:  func() (err error) { to = time.Now(); after, err = testenv.Scrape(addr); return err },
	}
	lag, err := r.lag(ctx, hooks, extra...)
	if err != nil {
		return nil, err
	}
	run := &shadowRun{Shadow: shadow, Seconds: to.Sub(from).Seconds(), Lag: lag, Patterns: map[string]*shadowCounts{}}
	if run.MismatchLog, err = mismatchLines(lag.log); err != nil {
		return nil, err
	}
	run.Applied = int64(metricSum(after, "dynafold_sync_changes_applied_total") - metricSum(before, "dynafold_sync_changes_applied_total"))
	run.ApplyRate = float64(run.Applied) / run.Seconds
	for _, c := range []struct {
		name string
		set  func(*shadowCounts, int64)
	}{
		{"dynafold_shadow_comparisons_total", func(p *shadowCounts, n int64) { p.Comparisons = n; run.Comparisons += n }},
		{"dynafold_shadow_mismatches_total", func(p *shadowCounts, n int64) { p.Mismatches = n; run.Mismatches += n }},
		{"dynafold_shadow_skipped_total", func(p *shadowCounts, n int64) { p.Skipped = n; run.Skipped += n }},
	} {
		for pattern, v := range metricByLabel(after, c.name, "pattern") {
			p := run.Patterns[pattern]
			if p == nil {
				p = &shadowCounts{}
				run.Patterns[pattern] = p
			}
			c.set(p, int64(v-metricByLabel(before, c.name, "pattern")[pattern]))
		}
	}
	return run, nil
}

// mismatchLines are the mismatches logged in a sync log, the first
// maxMismatchLines of them.
func mismatchLines(logPath string) ([]json.RawMessage, error) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "shadow comparison: DynamoDB's answer differs") && json.Valid([]byte(line)) && len(out) < maxMismatchLines {
			out = append(out, json.RawMessage(line))
		}
	}
	return out, nil
}

// keepLog copies a run's sync log to path.
func keepLog(from, path string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	fmt.Println("sync's log of the run with mismatches:", path)
	return os.WriteFile(path, b, 0o644)
}

// summarise adds up a source's runs.
func summarise(s *shadowSource) {
	var on, off, p99On, p99Off []float64
	var minutes float64
	for _, r := range s.Runs {
		if !r.Shadow {
			off = append(off, r.ApplyRate)
			p99Off = append(p99Off, r.Lag.P99Lag)
			s.MaxLagOff = max(s.MaxLagOff, r.Lag.MaxLag)
			continue
		}
		on = append(on, r.ApplyRate)
		p99On = append(p99On, r.Lag.P99Lag)
		s.MaxLagOn = max(s.MaxLagOn, r.Lag.MaxLag)
		s.Comparisons += r.Comparisons
		s.Mismatches += r.Mismatches
		s.Skipped += r.Skipped
		minutes += r.Seconds / 60
	}
	if minutes > 0 {
		s.ComparisonsPerMinute = float64(s.Comparisons) / minutes
	}
	s.ApplyRateOff, s.ApplyRateOn = medianOf(off), medianOf(on)
	if s.ApplyRateOff > 0 {
		s.ApplyRatio = s.ApplyRateOn / s.ApplyRateOff
	}
	s.P99LagOff, s.P99LagOn = medianOf(p99Off), medianOf(p99On)
}

func printShadow(r *shadowResults) {
	for _, s := range r.Sources {
		fmt.Printf("%s: %d changes/s for %ds a run, %d items, --shadow-rate %g: %.0f comparisons/min (%d comparisons, %d mismatches, %d skipped); changes applied/s %.0f with the comparison, %.0f without (%.2f×); lag p99 %.2fs with, %.2fs without (max %.2fs, %.2fs)\n",
			s.Source, s.TargetRate, s.Seconds, s.Items, s.ShadowRate, s.ComparisonsPerMinute, s.Comparisons, s.Mismatches, s.Skipped,
			s.ApplyRateOn, s.ApplyRateOff, s.ApplyRatio, s.P99LagOn, s.P99LagOff, s.MaxLagOn, s.MaxLagOff)
		fmt.Printf("%s: goal ≥ 1,000 comparisons/min %s, 0 mismatches %s, apply rate ≥ 0.9× %s\n", s.Source,
			met(s.ComparisonsPerMinute >= 1000), met(s.Mismatches == 0), met(s.ApplyRatio >= 0.9))
	}
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
