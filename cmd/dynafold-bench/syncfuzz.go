package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/internal/syncfuzz"
	"github.com/dynafold/dynafold/internal/testenv"
)

// errDiverged ends syncfuzz with exit 1: sync and a fresh migrate
// disagreed. Any other error (a service, the harness) exits 2.
var errDiverged = errors.New("sync diverged from a fresh migrate")

type fuzzOptions struct {
	engines, designs []string
	ops              int
	seed             uint64
	phaseOps, conns  int
	hot, bigTxn      int
	kills, ddlAt     int
	restarts         int
	ownServer        bool
	shrink           bool
	keep             bool
	bin, repo, out   string
	trace            string
	dynamoFaults     float64
	stateDynamo      bool
	ddlRate          float64
}

func syncFuzzCommand() *cobra.Command {
	o := fuzzOptions{}
	cmd := &cobra.Command{
		Use:   "syncfuzz",
		Short: "Differential fuzz of live sync: random DML while sync runs, the table compared with a fresh migrate after every phase",
		Long: `syncfuzz loads a design's source, runs dynafold sync, and commits random
operations while it runs; after every phase the synced table must equal a
fresh migrate of the source, item for item, and verify must exit 0.

Exit 0: nothing diverged. Exit 1: a divergence, printed with the seed, the
design, the engine, the operation count and the diverging items (with
--shrink, also the shortest failing operation count found by bisection).
Exit 2: the harness failed (a service, a design that does not load).

The services are the tests' own: DYNAFOLD_TEST_PG_DSN, DYNAFOLD_TEST_MYSQL_DSN
and DYNAFOLD_TEST_DYNAMODB_ENDPOINT when set, else scripts/services.sh
starts them.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := syncFuzz(cmd.Context(), o)
			switch {
			case errors.Is(err, errDiverged):
				fmt.Fprintln(os.Stderr, "dynafold-bench:", err)
				os.Exit(1)
			case err != nil:
				fmt.Fprintln(os.Stderr, "dynafold-bench:", err)
				os.Exit(2)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.engines, "engine", []string{"postgres"}, "postgres, mysql, or both (comma-separated)")
	f.StringSliceVar(&o.designs, "design", []string{"portfolios"}, "design names (comma-separated), or all")
	f.IntVar(&o.ops, "ops", 10_000, "random operations per engine and design")
	f.Uint64Var(&o.seed, "seed", 0, "the seed (0: a random one, printed)")
	f.IntVar(&o.phaseOps, "phase-ops", 2500, "operations between two checks against a fresh migrate")
	f.IntVar(&o.conns, "conns", 3, "interleaved source connections")
	f.IntVar(&o.hot, "hot", 1000, "updates of one hot row from 4 connections in the first phase")
	f.Float64Var(&o.ddlRate, "ddl-rate", syncfuzz.DefaultDDLRate, "share of operations that are schema changes of the design's tables while sync runs (docs/sync.md: continue, re-derive or stop); 0 for none")
	f.IntVar(&o.bigTxn, "big-txn", 0, "rows inserted by one transaction in the first phase")
	f.IntVar(&o.ddlAt, "ddl-at", 0, "the operation before which a column is added to a mapped table (default half of --ops; -1 for none)")
	f.IntVar(&o.kills, "kills", 0, "SIGKILLs of sync at random operations, each followed by a restart")
	f.IntVar(&o.restarts, "restarts", 0, "restarts of the source server at random operations, while sync runs (the source is then a server of the run's own, not the shared one)")
	f.BoolVar(&o.ownServer, "own-server", false, "run the source on a server of the run's own (as --restarts does): a long transaction on the shared server holds up every replication slot being created there")
	f.BoolVar(&o.shrink, "shrink", false, "on a divergence, bisect the operation count down to the shortest failing run")
	f.BoolVar(&o.keep, "keep", false, "on a divergence, keep the source database and the tables")
	f.StringVar(&o.bin, "bin", "", "the dynafold binary (default: built from --repo)")
	f.StringVar(&o.repo, "repo", ".", "repository root")
	f.BoolVar(&o.stateDynamo, "state-dynamo", false, "sync keeps its state in a DynamoDB table of the run's own (--state dynamodb://, lease 2s), through the fault proxy when --dynamo-faults is set")
	f.Float64Var(&o.dynamoFaults, "dynamo-faults", 0, "share of sync's BatchWriteItem requests failed by a fault proxy (throttles, 5xx, resets before and after the write, partial batches)")
	f.StringVar(&o.trace, "trace", "", "file to write every statement and its outcome to")
	f.StringVar(&o.out, "out", "", "directory for the JSON results (none when empty)")
	return cmd
}

func syncFuzz(ctx context.Context, o fuzzOptions) error {
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return err
	}
	env, err := services(repo)
	if err != nil {
		return err
	}
	if o.bin == "" {
		dir, err := os.MkdirTemp("", "syncfuzz-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.bin = filepath.Join(dir, "dynafold")
		build := exec.Command("go", "build", "-o", o.bin, "./cmd/dynafold")
		build.Dir, build.Stdout, build.Stderr = repo, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building dynafold: %w", err)
		}
	}
	// Sync runs in a directory of its own.
	if o.bin, err = filepath.Abs(o.bin); err != nil {
		return err
	}
	if o.seed == 0 {
		o.seed = rand.Uint64() % 1_000_000_000
	}
	var designs []syncfuzz.Design
	for _, name := range o.designs {
		if name == "all" {
			designs = append(designs, syncfuzz.Designs...)
			continue
		}
		d, err := syncfuzz.DesignNamed(name)
		if err != nil {
			return err
		}
		designs = append(designs, d)
	}
	var results []*syncfuzz.Result
	diverged := false
	for _, engine := range o.engines {
		server := env["DYNAFOLD_TEST_PG_DSN"]
		if engine == "mysql" {
			server = env["DYNAFOLD_TEST_MYSQL_DSN"]
		}
		var restart func(context.Context) error
		if o.restarts > 0 || o.ownServer {
			prog := testenv.NewProgram("syncfuzz")
			defer prog.Close()
			if server, restart, err = ownServer(prog, engine); err != nil {
				return err
			}
		}
		for _, d := range designs {
			opts := syncfuzz.Options{Engine: engine, Design: d, Ops: o.ops, Seed: o.seed, PhaseOps: o.phaseOps, Conns: o.conns,
				Hot: o.hot, BigTxn: o.bigTxn, Kills: o.kills, DDLAt: o.ddlAt, DDLRate: ddlRateOption(o.ddlRate), DynamoFaults: o.dynamoFaults, StateDynamo: o.stateDynamo, Repo: repo, Bin: o.bin, ServerDSN: server,
				Endpoint: env["DYNAFOLD_TEST_DYNAMODB_ENDPOINT"], Log: prefixed(engine + "/" + d.Name), Keep: o.keep,
				Restarts: o.restarts, Restart: restart}
			if o.trace != "" {
				tf, err := os.Create(fmt.Sprintf("%s.%s.%s", o.trace, engine, d.Name))
				if err != nil {
					return err
				}
				defer tf.Close()
				opts.Trace = tf
			}
			fmt.Printf("syncfuzz %s/%s: %d operations, seed %d\n", engine, d.Name, o.ops, o.seed)
			res, err := syncfuzz.Run(ctx, opts)
			if err != nil {
				return fmt.Errorf("%s/%s seed %d: %w", engine, d.Name, o.seed, err)
			}
			results = append(results, res)
			if res.Divergence == nil {
				fmt.Printf("syncfuzz %s/%s: no divergence: %d operations (%d failed by the server's constraints), %d statements, %d transactions committed, %d rolled back, %d savepoints rolled back, %d kills, %d source restarts, %d DynamoDB faults, %d items compared over %d phases, in %.0fs; sync's peak RSS %d MB\n",
					engine, d.Name, res.Ops, res.Failed, res.Statements, res.Committed, res.RolledBack, res.Savepoints, res.Kills, res.Restarts, res.FaultsInjected, res.Items, res.Phases, res.Seconds, res.SyncRSS>>20)
				continue
			}
			diverged = true
			fmt.Printf("syncfuzz %s/%s: DIVERGED, seed %d, %s\nreproduce: %s\n", engine, d.Name, o.seed, res.Divergence, res.Reproduce())
			if res.Database != "" && o.keep {
				fmt.Printf("kept source database %s\n", res.Database)
			}
			if o.shrink {
				short, err := syncfuzz.Shrink(ctx, opts, res)
				if err != nil {
					return err
				}
				fmt.Printf("shortest failing run: %d operations\nreproduce: %s\n%s", short.Ops, short.Reproduce(), short.Divergence)
			}
		}
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		b, _ := json.MarshalIndent(results, "", "  ")
		path := filepath.Join(o.out, fmt.Sprintf("syncfuzz-%s-%d-%s.json", strings.Join(o.engines, "-"), o.seed, time.Now().UTC().Format("20060102-150405")))
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Println("saved", path)
	}
	if diverged {
		return errDiverged
	}
	return nil
}

// ownServer starts a source server of the run's own (the shared one
// serves tests that must not see it restart) and returns its DSN and what
// restarts it, as an operator does (PostgreSQL: pg_ctl restart -m fast;
// MariaDB: a clean shutdown and start).
func ownServer(prog *testenv.Program, engine string) (string, func(context.Context) error, error) {
	var dsn string
	var restart func()
	err := prog.Do(func() {
		switch engine {
		case "mysql":
			srv := testenv.StartMariaDB(prog)
			dsn, restart = srv.DSN(""), func() { srv.Restart(prog) }
		default:
			srv := testenv.StartPostgres(prog)
			dsn, restart = srv.DSN("postgres"), func() { srv.Restart(prog) }
		}
	})
	if err != nil {
		return "", nil, fmt.Errorf("starting a %s server of the run's own: %w", engine, err)
	}
	return dsn, func(context.Context) error { return prog.Do(restart) }, nil
}

// services returns the services' addresses: from the environment when the
// tests' variables are set, else from scripts/services.sh, which starts
// what is not running.
func services(repo string) (map[string]string, error) {
	keys := []string{"DYNAFOLD_TEST_PG_DSN", "DYNAFOLD_TEST_MYSQL_DSN", "DYNAFOLD_TEST_DYNAMODB_ENDPOINT"}
	env := map[string]string{}
	for _, k := range keys {
		env[k] = os.Getenv(k)
	}
	if env[keys[0]] != "" && env[keys[1]] != "" && env[keys[2]] != "" {
		return env, nil
	}
	start := exec.Command("bash", "scripts/services.sh", "start")
	start.Dir, start.Stdout, start.Stderr = repo, os.Stderr, os.Stderr
	if err := start.Run(); err != nil {
		return nil, fmt.Errorf("starting the services: %w", err)
	}
	dir := os.Getenv("DYNAFOLD_SERVICES_DIR")
	if dir == "" {
		dir = filepath.Join(repo, ".services")
	}
	file, err := os.Open(filepath.Join(dir, "env"))
	if err != nil {
		return nil, err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "export ")
		k, v, ok := strings.Cut(line, "=")
		if ok && env[k] == "" {
			env[k] = strings.Trim(v, `'"`)
		}
	}
	return env, sc.Err()
}

type prefixWriter struct{ prefix string }

func (p prefixWriter) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		fmt.Printf("  %s: %s\n", p.prefix, line)
	}
	return len(b), nil
}

func prefixed(p string) prefixWriter { return prefixWriter{p} }

// ddlRateOption maps the flag onto syncfuzz.Options.DDLRate, where 0 means
// the default and a negative rate none.
func ddlRateOption(rate float64) float64 {
	if rate <= 0 {
		return -1
	}
	return rate
}
