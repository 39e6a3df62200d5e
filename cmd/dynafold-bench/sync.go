package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
)

// syncOptions of the live-sync benchmark.
type syncOptions struct {
	bin, repo, pgDSN, out string
	mysqlDSN              string
	portfolios            int
	changes               int
	fanoutChanges         int
	fanoutRuns            int
	fanoutPortfolios      int
	bigTxnRows            int
	lagRate               int
	lagConns              int
	lagSyncCommit         bool
	lagSeconds            int
	writers               int
	reconnects            int
	outage                time.Duration
	metricsPairs          int
	metricsChanges        int
	// stateDynamo runs the single-row and fan-out scenarios a second
	// time with the state in DynamoDB at stateEndpoint.
	stateDynamo   bool
	stateEndpoint string
	// stateIndexCache is the state runs' --index-cache.
	stateIndexCache int
	// profileDir, when set, receives CPU and allocation profiles, an
	// execution trace and the debug log of every measured catch-up,
	// named after its table.
	profileDir string
	// sourceRTT puts the source at this round trip from sync, through
	// proxies.
	sourceRTT time.Duration
	proxies   *delayProxies
	// noopPid is the no-op endpoint's process, whose CPU a run counts.
	noopPid int
	// readers is dynafold sync --concurrency (0: its default).
	readers int
}

// syncScenario is one measured line of the live-sync report.
type syncScenario struct {
	Name          string  `json:"name"`
	Changes       int64   `json:"changes"`
	Items         int64   `json:"items_written_and_deleted"`
	Seconds       float64 `json:"seconds"`
	ChangesPerSec float64 `json:"changes_per_second"`
	ItemsPerSec   float64 `json:"items_per_second"`
	CPUPerM       float64 `json:"cpu_seconds_per_million_changes"`
	PeakRSSMB     float64 `json:"peak_rss_mb"`
	// SyncCPU, SourceCPU and NoopCPU are the CPU seconds sync, the source
	// server (on this machine) and the no-op endpoint spent on the run;
	// CoresBound is the rate at which the machine's cores, all busy, would
	// have done that work: a rate near it is bound by the machine.
	SyncCPU    float64 `json:"sync_cpu_seconds"`
	SourceCPU  float64 `json:"source_server_cpu_seconds"`
	NoopCPU    float64 `json:"noop_cpu_seconds"`
	CoresBound float64 `json:"items_per_second_with_every_core_busy"`
	Note       string  `json:"note,omitempty"`
	Rounds     int64   `json:"-"`
	// cache is the run's row_index_cache (a state in DynamoDB only).
	cache *indexCache
}

// indexCache is the row-index lookups a sync answered from memory (hits)
// and passed to the state table (misses).
type indexCache struct {
	Hits   int64 `json:"hits"`
	Misses int64 `json:"misses"`
	// Warmed is what sync read of the index into memory when it began.
	Warmed struct {
		Rows    int64   `json:"rows"`
		Seconds float64 `json:"seconds"`
		Whole   bool    `json:"whole_index"`
	} `json:"warmed"`
}

type syncResults struct {
	Date      time.Time      `json:"date"`
	Command   string         `json:"command"`
	Scenarios []syncScenario `json:"scenarios"`
	Lag       []*lagResult   `json:"lag,omitempty"`
	// Reconnect is the time from the source answering again to streaming
	// again; MetricsCPU the CPU of the same backlog with --metrics-addr
	// and without, in alternating runs.
	Reconnect  []*reconnectResult `json:"reconnect,omitempty"`
	MetricsCPU []*metricsCPU      `json:"metrics_cpu,omitempty"`
	// StateDynamo compares the state in local files with the state in
	// DynamoDB (--state-dynamo).
	StateDynamo []*stateCompare `json:"state_dynamodb,omitempty"`
	// StateProbe is the state endpoint's row-index read rate with nothing
	// else running (--state-dynamo).
	StateProbe *stateProbe `json:"state_endpoint_probe,omitempty"`
}

// metricsCPU is sync's CPU per million single-row changes with the
// metrics served and without, one figure per run, runs alternating.
type metricsCPU struct {
	Source    string    `json:"source"`
	Changes   int       `json:"changes_per_run"`
	On        []float64 `json:"cpu_seconds_per_million_changes_metrics_on"`
	Off       []float64 `json:"cpu_seconds_per_million_changes_metrics_off"`
	MedianOn  float64   `json:"median_on"`
	MedianOff float64   `json:"median_off"`
}

// lagResult is the lag sync reported, once a second, while the source
// committed single-row transactions at a fixed rate.
type lagResult struct {
	Source       string  `json:"source"`
	TargetRate   int     `json:"target_changes_per_second"`
	AchievedRate float64 `json:"committed_changes_per_second"`
	Seconds      int     `json:"seconds"`
	// Samples are sync's rounds; their lag is from the commit of a
	// round's last change to DynamoDB acknowledging the round.
	Samples int     `json:"rounds"`
	MaxLag  float64 `json:"max_lag_seconds"`
	P50Lag  float64 `json:"p50_lag_seconds"`
	P99Lag  float64 `json:"p99_lag_seconds"`
	// ReportedMaxLag is the largest lag sync itself reported.
	ReportedMaxLag float64 `json:"reported_max_lag_seconds"`
	MaxLagBytes    int64   `json:"max_lag_bytes"`
	Applied        int64   `json:"changes_applied"`
	// log is sync's log of the run (JSON, debug level), in the work
	// directory.
	log string
}

func syncBenchCommand() *cobra.Command {
	o := syncOptions{}
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Measure live sync: apply rate of single-row and fan-out changes into the no-op endpoint, and lag under a steady commit rate",
		RunE:  func(cmd *cobra.Command, _ []string) error { return syncBench(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.bin, "bin", "bin", "directory with the dynafold and dynafold-noop binaries")
	f.StringVar(&o.repo, "repo", ".", "repository root")
	f.StringVar(&o.pgDSN, "pg-dsn", os.Getenv("DYNAFOLD_TEST_PG_DSN"), "PostgreSQL server DSN (wal_level=logical); empty to skip")
	f.StringVar(&o.mysqlDSN, "mysql-dsn", os.Getenv("DYNAFOLD_TEST_MYSQL_DSN"), "MariaDB/MySQL server DSN (row-based binlog); empty to skip")
	f.IntVar(&o.portfolios, "portfolios", 10_000, "portfolios of the single-row dataset (10 items each)")
	f.IntVar(&o.changes, "changes", 200_000, "single-row transactions applied in the apply-rate run")
	f.IntVar(&o.fanoutChanges, "fanout-changes", 10_000, "portfolio renames (each rewriting 61 items) in the fan-out run")
	f.IntVar(&o.fanoutRuns, "fanout-runs", 1, "fan-out runs on the same dataset, each a backlog and its catch-up (this machine's rates vary by some 20 % from run to run: compare medians)")
	f.IntVar(&o.fanoutPortfolios, "fanout-portfolios", 10_000, "portfolios of the fan-out dataset (61 items each); renames go round them")
	f.IntVar(&o.bigTxnRows, "big-txn-rows", 1_000_000, "rows inserted by the one transaction of the large-transaction run (0 to skip)")
	f.IntVar(&o.lagRate, "lag-rate", 10_000, "single-row transactions per second committed in the lag run")
	f.IntVar(&o.lagConns, "lag-conns", 8, "sessions committing in the lag run")
	f.BoolVar(&o.lagSyncCommit, "lag-synchronous-commit", false, "PostgreSQL: commit the lag run's transactions with synchronous_commit on (the server's default) instead of the test server's off")
	f.IntVar(&o.lagSeconds, "lag-seconds", 30, "length of the lag run")
	f.IntVar(&o.writers, "writers", 8, "dynafold --writers")
	f.IntVar(&o.readers, "concurrency", 0, "dynafold sync --concurrency: connections that read a round's slices at once (PostgreSQL; 0: sync's default)")
	f.DurationVar(&o.sourceRTT, "source-rtt", 0, "put the source this round trip away from sync (a proxy delays its connections by half of it each way; the bench's own statements go straight), as a server in another availability zone is (about 1ms)")
	f.IntVar(&o.reconnects, "reconnects", 5, "source outages in the reconnect run (0 to skip)")
	f.DurationVar(&o.outage, "outage", 2*time.Second, "how long the source refuses connections in each outage of the reconnect run")
	f.IntVar(&o.metricsPairs, "metrics-pairs", 3, "pairs of runs, --metrics-addr on and off, in the metrics CPU run (0 to skip)")
	f.IntVar(&o.metricsChanges, "metrics-changes", 50_000, "single-row transactions applied in each run of the metrics CPU run")
	f.BoolVar(&o.stateDynamo, "state-dynamo", false, "also run the single-row and fan-out scenarios with --state dynamodb:// (the state table at --state-endpoint, the target still the no-op endpoint) on the same backlog, and compare the rates")
	f.IntVar(&o.stateIndexCache, "state-index-cache", 1_000_000, "with --state-dynamo: the state runs' --index-cache (rows); the default holds the fan-out dataset's whole index (610,000 rows)")
	f.StringVar(&o.stateEndpoint, "state-endpoint", os.Getenv("DYNAFOLD_TEST_DYNAMODB_ENDPOINT"), "with --state-dynamo: the DynamoDB endpoint of the state table (dynalite)")
	f.StringVar(&o.out, "out", "bench-results", "directory for the JSON results")
	f.StringVar(&o.profileDir, "profile-dir", "", "write a CPU profile, an allocation profile, an execution trace and the debug log of each measured catch-up (dynafold sync --cpuprofile, --memprofile, --trace, --log-level debug) to this directory, as TABLE.cpu.pprof, TABLE.mem.pprof, TABLE.trace and TABLE.log")
	return cmd
}

func syncBench(ctx context.Context, o syncOptions) error {
	var dbs []syncDB
	if o.pgDSN != "" {
		dbs = append(dbs, pgBench{server: o.pgDSN, syncCommit: o.lagSyncCommit})
	}
	if o.mysqlDSN != "" {
		dbs = append(dbs, myBench{server: o.mysqlDSN})
	}
	if len(dbs) == 0 {
		return fmt.Errorf("no source: pass --pg-dsn or --mysql-dsn (or set DYNAFOLD_TEST_PG_DSN, DYNAFOLD_TEST_MYSQL_DSN)")
	}
	work, err := os.MkdirTemp("", "dynafold-syncbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	res := &syncResults{Date: time.Now().UTC(), Command: "dynafold-bench " + strings.Join(os.Args[1:], " ")}
	if o.sourceRTT > 0 {
		o.proxies = newDelayProxies(o.sourceRTT)
		defer o.proxies.close()
	}
	noop, err := startServer(ctx, filepath.Join(work, "noop.log"), filepath.Join(o.bin, "dynafold-noop"), "-addr", "{addr}")
	if err != nil {
		return err
	}
	defer noop.stop()
	o.noopPid = noop.cmd.Process.Pid
	var state *dynamoState
	if o.stateDynamo {
		if o.stateEndpoint == "" {
			return fmt.Errorf("--state-dynamo needs --state-endpoint (or DYNAFOLD_TEST_DYNAMODB_ENDPOINT)")
		}
		if state, err = newDynamoState(o.stateEndpoint); err != nil {
			return err
		}
		defer func() { _ = state.close(context.Background()) }()
		if res.StateProbe, err = probeState(ctx, o.stateEndpoint, 20_000); err != nil {
			return fmt.Errorf("probing the state endpoint: %w", err)
		}
		fmt.Printf("state endpoint %s alone: %.0f row-index reads/s (sync's reads: consistent BatchGetItem, 100 keys a request, 8 in flight; %d rows read %d times); %.0f rows/s listed whole (consistent Scan, 8 segments)\n",
			o.stateEndpoint, res.StateProbe.KeysPerSec, res.StateProbe.Rows, res.StateProbe.Reads/res.StateProbe.Rows, res.StateProbe.ListPerSec)
	}
	for _, db := range dbs {
		if err := syncBenchOne(ctx, o, db, work, noop.URL, state, res); err != nil {
			return fmt.Errorf("%s: %w", db.name(), err)
		}
	}
	printSync(res)
	printStateCompare(res.StateDynamo)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	path := filepath.Join(o.out, "sync-"+res.Date.Format("20060102-150405")+".json")
	fmt.Println("saved", path)
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// syncBenchOne runs the scenarios against one database; with a state
// (--state-dynamo), the single-row and fan-out ones twice.
func syncBenchOne(ctx context.Context, o syncOptions, db syncDB, work, endpoint string, state *dynamoState, res *syncResults) error {
	dynafold := filepath.Join(o.bin, "dynafold")
	config := filepath.Join(o.repo, "testdata", "sync", "portfolios.yaml")
	prefix := db.name() + ": "

	// Single-row changes: each transaction moves one database to another
	// server of its portfolio (its item is rewritten).
	single, err := db.create(ctx, "bench_sync_single", o.portfolios, 3, 2)
	if err != nil {
		return err
	}
	sd, err := newSyncRun(o, db, dynafold, config, endpoint, single, "bench_sync_single_"+db.short(), work)
	if err != nil {
		return err
	}
	if err := sd.prepare(ctx); err != nil {
		return err
	}
	runs := []*syncRun{sd}
	var sdState *syncRun
	if state != nil {
		sdState = sd.withDynamoState(state)
		if err := sdState.prepare(ctx); err != nil {
			return err
		}
		runs = append(runs, sdState)
	}
	if err := db.singleRowBacklog(ctx, single, o.changes, o.portfolios); err != nil {
		return err
	}
	if sdState != nil {
		if err := compareState(ctx, db, "single-row changes", sd, sdState, state, res); err != nil {
			return err
		}
	} else {
		sc, err := sd.catchUp(ctx, prefix+"single-row changes → no-op", "")
		if err != nil {
			return err
		}
		res.Scenarios = append(res.Scenarios, *sc)
	}

	if o.lagSeconds > 0 {
		if err := db.settle(ctx, single); err != nil {
			return err
		}
		lag, err := sd.lag(ctx, lagHooks{})
		if err != nil {
			return err
		}
		lag.Source = db.name()
		res.Lag = append(res.Lag, lag)
	}
	if o.metricsPairs > 0 {
		mc := &metricsCPU{Source: db.name(), Changes: o.metricsChanges}
		for i := 0; i < 2*o.metricsPairs; i++ {
			if err := db.singleRowBacklog(ctx, single, o.metricsChanges, o.portfolios); err != nil {
				return err
			}
			var extra []string
			if i%2 == 0 {
				extra = []string{"--metrics-addr", "127.0.0.1:0"}
			}
			sc, err := sd.catchUp(ctx, "metrics", "", extra...)
			if err != nil {
				return err
			}
			if i%2 == 0 {
				mc.On = append(mc.On, sc.CPUPerM)
			} else {
				mc.Off = append(mc.Off, sc.CPUPerM)
			}
		}
		mc.MedianOn, mc.MedianOff = medianOf(mc.On), medianOf(mc.Off)
		res.MetricsCPU = append(res.MetricsCPU, mc)
	}
	if o.reconnects > 0 {
		rc, err := sd.reconnect(ctx, db.name(), o.reconnects, o.outage)
		if err != nil {
			return err
		}
		res.Reconnect = append(res.Reconnect, rc)
	}
	// The fan-out and large-transaction runs come after the lag run: the
	// vacuum of what they rewrite writes WAL that a logical walsender
	// reads too.
	// Fan-out: each transaction renames a portfolio whose name every one
	// of its 10 servers and 50 databases copies: 61 items per change.
	fan, err := db.create(ctx, "bench_sync_fanout", o.fanoutPortfolios, 10, 5)
	if err != nil {
		return err
	}
	fd, err := newSyncRun(o, db, dynafold, config, endpoint, fan, "bench_sync_fanout_"+db.short(), work)
	if err != nil {
		return err
	}
	if err := fd.prepare(ctx); err != nil {
		return err
	}
	runs = append(runs, fd)
	var fdState *syncRun
	if state != nil {
		fdState = fd.withDynamoState(state)
		if err := fdState.prepare(ctx); err != nil {
			return err
		}
		runs = append(runs, fdState)
	}
	if fdState != nil {
		if err := db.fanoutBacklog(ctx, fan, o.fanoutChanges, o.fanoutPortfolios, 1); err != nil {
			return err
		}
		if err := compareState(ctx, db, "fan-out changes (61 items each)", fd, fdState, state, res); err != nil {
			return err
		}
	} else {
		runs := max(1, o.fanoutRuns)
		for i := range runs {
			if err := db.fanoutBacklog(ctx, fan, o.fanoutChanges, o.fanoutPortfolios, i+1); err != nil {
				return err
			}
			name := prefix + "fan-out changes (61 items each) → no-op"
			if runs > 1 {
				name += fmt.Sprintf(", run %d of %d", i+1, runs)
			}
			sc, err := fd.catchUp(ctx, name, "")
			if err != nil {
				return err
			}
			res.Scenarios = append(res.Scenarios, *sc)
		}
	}

	// One large transaction: sync receives it in pieces, so its memory
	// is that of a piece, not of the transaction. It runs last: the
	// vacuum of a million new rows writes WAL that every logical
	// walsender of the server then reads, which would show as lag in the
	// runs after it.
	if o.bigTxnRows > 0 {
		big, err := db.create(ctx, "bench_sync_bigtxn", 1000, 10, 5)
		if err != nil {
			return err
		}
		bd, err := newSyncRun(o, db, dynafold, config, endpoint, big, "bench_sync_bigtxn_"+db.short(), work)
		if err != nil {
			return err
		}
		if err := bd.prepare(ctx); err != nil {
			return err
		}
		if err := db.bigTxn(ctx, big, o.bigTxnRows, 1000); err != nil {
			return err
		}
		sc, err := bd.catchUp(ctx, fmt.Sprintf("%sone transaction of %d rows → no-op", prefix, o.bigTxnRows), "")
		if err != nil {
			return err
		}
		res.Scenarios = append(res.Scenarios, *sc)
		runs = append(runs, bd)
	}

	// Drop the slots: a forgotten one keeps WAL on the server.
	for _, r := range runs {
		if _, err := runMeasured(ctx, nil, dynafold, append([]string{"sync", "cleanup", "--config", r.config, "--endpoint", r.endpoint,
			"--table", r.table, "--source-dsn", r.syncDSN}, r.stateFlags()...)...); err != nil {
			return err
		}
	}
	return nil
}

// syncRun is one dataset synced into a table of the no-op endpoint.
type syncRun struct {
	o                                            syncOptions
	db                                           syncDB
	dynafold, config, endpoint, dsn, table, work string
	// syncDSN is dsn as sync reaches it: through a delaying proxy with
	// --source-rtt.
	syncDSN string
	// state is the --state flags of a state in DynamoDB (none: local
	// files under work); syncOnly flags that sync takes and its
	// subcommands (cleanup) do not.
	state, syncOnly []string
}

func newSyncRun(o syncOptions, db syncDB, dynafold, config, endpoint, dsn, table, work string) (*syncRun, error) {
	syncDSN, err := o.proxies.route(dsn)
	if err != nil {
		return nil, err
	}
	return &syncRun{o: o, db: db, dynafold: dynafold, config: config, endpoint: endpoint, dsn: dsn, syncDSN: syncDSN, table: table, work: work}, nil
}

func (r *syncRun) flags() []string {
	flags := []string{"--config", r.config, "--endpoint", r.endpoint, "--table", r.table, "--source-dsn", r.syncDSN,
		"--writers", strconv.Itoa(r.o.writers)}
	if r.o.readers > 0 {
		flags = append(flags, "--concurrency", strconv.Itoa(r.o.readers))
	}
	return append(append(flags, r.stateFlags()...), r.syncOnly...)
}

// stateFlags say where the run's state is.
func (r *syncRun) stateFlags() []string {
	if r.state != nil {
		return r.state
	}
	return []string{"--checkpoint", filepath.Join(r.work, r.table+".sync.json")}
}

// prepare creates the table and runs the initial load.
func (r *syncRun) prepare(ctx context.Context) error {
	if _, err := runMeasured(ctx, nil, r.dynafold, "table", "create", "--source-dsn", r.dsn, "--config", r.config, "--endpoint", r.endpoint, "--table", r.table); err != nil {
		return err
	}
	_, err := runMeasured(ctx, nil, r.dynafold, append([]string{"sync", "--until-caught-up", "--progress", "none"}, r.flags()...)...)
	return err
}

// catchUp applies the backlog with sync --until-caught-up and reads its
// report.
func (r *syncRun) catchUp(ctx context.Context, name, note string, extra ...string) (*syncScenario, error) {
	report := filepath.Join(r.work, r.table+".report.json")
	if dir := r.o.profileDir; dir != "" {
		extra = append(extra, "--cpuprofile", filepath.Join(dir, r.table+".cpu.pprof"), "--memprofile", filepath.Join(dir, r.table+".mem.pprof"), "--trace", filepath.Join(dir, r.table+".trace"), "--log-level", "debug")
	}
	noopBefore, _ := procCPU(r.o.noopPid)
	share := sampleServerCPU()
	m, err := runMeasured(ctx, nil, r.dynafold, append(append([]string{"sync", "--until-caught-up", "--progress", "none", "--report", report}, r.flags()...), extra...)...)
	sourceCPU := share.seconds()
	noopAfter, _ := procCPU(r.o.noopPid)
	if err != nil {
		return nil, err
	}
	if dir := r.o.profileDir; dir != "" {
		if err := os.WriteFile(filepath.Join(dir, r.table+".log"), []byte(m.Stderr), 0o644); err != nil {
			return nil, err
		}
	}
	var rep struct {
		Result struct {
			Run struct {
				Changes      int64 `json:"changes"`
				ItemsWritten int64 `json:"items_written"`
				ItemsDeleted int64 `json:"items_deleted"`
				Rounds       int64 `json:"rounds"`
			} `json:"this_run"`
			Seconds float64     `json:"seconds"`
			Cache   *indexCache `json:"row_index_cache"`
		} `json:"result"`
	}
	data, err := os.ReadFile(report)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, err
	}
	run := rep.Result.Run
	secs := rep.Result.Seconds
	items := run.ItemsWritten + run.ItemsDeleted
	return &syncScenario{
		Name: name, Changes: run.Changes, Items: items, Seconds: secs,
		ChangesPerSec: float64(run.Changes) / secs, ItemsPerSec: float64(items) / secs,
		CPUPerM: m.CPU / float64(max(run.Changes, 1)) * 1e6, PeakRSSMB: float64(m.PeakRSS) / (1 << 20), Note: note,
		SyncCPU: m.CPU, SourceCPU: sourceCPU, NoopCPU: noopAfter - noopBefore,
		CoresBound: float64(items) / ((m.CPU + sourceCPU + noopAfter - noopBefore) / float64(runtime.NumCPU())),
		Rounds:     run.Rounds, cache: rep.Result.Cache,
	}, nil
}

// lag streams while --lag-conns sessions commit single-row transactions at
// the target rate, and measures the lag end to end: sync's debug log says
// when each round was applied (DynamoDB acknowledged it) and how many
// changes it held; the k-th change applied is the k-th commit made (sync
// applies in commit order, and every move changes its row), so a round's
// lag is its end minus the moment its last change was committed. Sync's
// own lag figure is read too, from its status line once a second: it
// counts from the oldest change sync has received, so it cannot see a
// backlog still on the server. extra are more sync flags; hooks, when
// set, are called as the commits start and once they are all made.
func (r *syncRun) lag(ctx context.Context, hooks lagHooks, extra ...string) (*lagResult, error) {
	logPath := filepath.Join(r.work, "lag.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, r.dynafold, append(append([]string{"sync", "--progress", "json", "--status-every", "1s", "--log-level", "debug"}, r.flags()...), extra...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = cmd.Process.Kill() }()
	for i := 0; ; i++ {
		b, _ := os.ReadFile(logPath)
		if strings.Contains(string(b), `"event":"sync_status"`) {
			break
		}
		if i > 600 {
			return nil, fmt.Errorf("sync did not start streaming:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Commit number i goes to session i mod lagConns, each paced by the
	// one schedule: one session alone cannot commit 10,000 times a second.
	conns := max(1, r.o.lagConns)
	total := r.o.lagRate * r.o.lagSeconds
	g, gctx := errgroup.WithContext(ctx)
	if err := hooks.call(hooks.committing); err != nil {
		return nil, err
	}
	from := time.Now()
	committed := make([][]time.Time, conns)
	for c := range conns {
		move, closeDB, err := r.db.mover(ctx, r.dsn)
		if err != nil {
			return nil, err
		}
		defer closeDB()
		g.Go(func() error {
			for i := c; i < total; i += conns {
				// Pace by the schedule, not by sleeping per commit.
				due := from.Add(time.Duration(i) * time.Second / time.Duration(r.o.lagRate))
				if d := time.Until(due); d > 0 {
					time.Sleep(d)
				}
				// Sessions move databases of distinct portfolios (i mod
				// portfolios), so that they never wait on each other's
				// rows; every pass moves each to another server (the
				// rows start on server 2), so every commit is a change.
				p := 1 + i%r.o.portfolios
				if err := move(gctx, fmt.Sprintf("Srv%dn%d", p, 1+(i/r.o.portfolios+2)%3), fmt.Sprintf("Db%dn2d1", p)); err != nil {
					return err
				}
				committed[c] = append(committed[c], time.Now())
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	elapsed := time.Since(from).Seconds()
	if err := hooks.call(hooks.committed); err != nil {
		return nil, err
	}
	var commits []time.Time
	for _, c := range committed {
		commits = append(commits, c...)
	}
	sort.Slice(commits, func(i, j int) bool { return commits[i].Before(commits[j]) })
	// Let sync apply the rest, then stop it.
	deadline := time.Now().Add(time.Minute)
	for applied(logPath) < int64(total) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()

	res := &lagResult{TargetRate: r.o.lagRate, AchievedRate: float64(total) / elapsed, Seconds: r.o.lagSeconds, log: logPath}
	f, err := os.Open(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lags, reported []float64
	var n int64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Event   string    `json:"event"`
			Msg     string    `json:"msg"`
			Time    time.Time `json:"time"`
			Changes int64     `json:"changes"`
			Lag     float64   `json:"lag_seconds"`
			Bytes   int64     `json:"lag_bytes"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch {
		case ev.Msg == "round applied":
			n += ev.Changes
			if n >= 1 && n <= int64(len(commits)) {
				lags = append(lags, max(ev.Time.Sub(commits[n-1]).Seconds(), 0))
			}
		case ev.Event == "sync_status" && !ev.Time.Before(from) && ev.Time.Before(from.Add(time.Duration(elapsed*float64(time.Second)))):
			reported = append(reported, ev.Lag)
			res.MaxLagBytes = max(res.MaxLagBytes, ev.Bytes)
		}
	}
	res.Applied = n
	sort.Float64s(lags)
	sort.Float64s(reported)
	res.Samples = len(lags)
	if len(lags) > 0 {
		res.MaxLag = lags[len(lags)-1]
		res.P50Lag = lags[len(lags)/2]
		res.P99Lag = lags[len(lags)*99/100]
	}
	if len(reported) > 0 {
		res.ReportedMaxLag = reported[len(reported)-1]
	}
	return res, nil
}

// lagHooks are what a lag run calls while sync runs: committing as the
// first commit is about to be made, committed once the last one is.
type lagHooks struct{ committing, committed func() error }

func (lagHooks) call(f func() error) error {
	if f == nil {
		return nil
	}
	return f()
}

// applied sums the changes of the rounds in a sync debug log.
func applied(logPath string) int64 {
	b, _ := os.ReadFile(logPath)
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, `"round applied"`) {
			continue
		}
		var ev struct {
			Changes int64 `json:"changes"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil {
			n += ev.Changes
		}
	}
	return n
}

func printSync(r *syncResults) {
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tchanges\tchanges/s\titems/s\tCPU s/M changes\tpeak RSS MB\tCPU s: sync, source, no-op\titems/s, every core busy\t")
	for _, s := range r.Scenarios {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.1f\t%.0f\t%.1f, %.1f, %.1f\t%.0f\t\n", s.Name, s.Changes, s.ChangesPerSec, s.ItemsPerSec, s.CPUPerM, s.PeakRSSMB,
			s.SyncCPU, s.SourceCPU, s.NoopCPU, s.CoresBound)
	}
	tw.Flush()
	for _, l := range r.Lag {
		fmt.Printf("%s: lag at %d commits/s (achieved %.0f) for %ds, commit to acknowledged: max %.2fs, p99 %.2fs, median %.2fs over %d rounds (sync reported at most %.2fs); max %d bytes of log behind; %d changes applied\n",
			l.Source, l.TargetRate, l.AchievedRate, l.Seconds, l.MaxLag, l.P99Lag, l.P50Lag, l.Samples, l.ReportedMaxLag, l.MaxLagBytes, l.Applied)
	}
	for _, m := range r.MetricsCPU {
		fmt.Printf("%s: CPU s per million changes, %d changes a run: metrics on %v (median %.1f), off %v (median %.1f)\n",
			m.Source, m.Changes, rounded(m.On), m.MedianOn, rounded(m.Off), m.MedianOff)
	}
	for _, c := range r.Reconnect {
		fmt.Printf("%s: from the source answering again to streaming again, after %.0fs outages: %v s (median %.2f, max %.2f)\n",
			c.Source, c.Outage, rounded(c.Trials), c.Median, c.Maximum)
	}
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func rounded(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(int(x*100+0.5)) / 100
	}
	return out
}
