// Package syncfuzz is the differential fuzzer of live sync. It loads a
// design's source, starts `dynafold sync`, and commits random DML while
// sync runs: inserts, updates of any column (keys, joins, filters, index
// columns to and from NULL), deletes with and without descendants,
// primary-key changes, values of 8-16 KB, transactions of random size on
// several interleaved connections, savepoints rolled back and aborted
// transactions, a hot row updated from four connections at once, a column
// added to a mapped table and an unmapped table truncated; and, now and
// then, schema changes of mapped tables that sync must go on through,
// re-derive after, or stop on (ddl.go). After each
// phase it stops sync, lets `sync --until-caught-up` finish, and requires
// the table to equal a fresh `migrate` of the source, item for item, and
// `verify` to exit 0.
//
// One goroutine drives every connection, one statement at a time, and a
// lock wait fails at once: so the statements, their order and their
// outcome are a function of the seed, and a failing run is reproduced by
// its seed alone (the hot row's final value, written by four goroutines,
// is the one exception, and nothing later depends on it).
package syncfuzz

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dynafold/dynafold/internal/faultproxy"
	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/mapping"
)

// Options are one run's settings. Ops, Seed, Engine and Design determine
// every statement.
type Options struct {
	Engine string // postgres or mysql
	Design Design
	Ops    int
	Seed   uint64
	// PhaseOps is the operations between two checks against a fresh
	// migrate (default 2,500); the run ends with one. Phase boundaries
	// commit every open transaction, so they sit at fixed operation
	// numbers: a shorter run with the same seed runs the same statements.
	PhaseOps int
	// DDLAt is the operation before which a column is added to a mapped
	// table (default Ops/2; negative for none).
	DDLAt int
	// DDLRate is the share of operations that are schema changes of
	// mapped tables drawn among every kind docs/sync.md gives an outcome
	// (ddl.go): 0 for DefaultDDLRate, negative for none.
	DDLRate float64
	// Conns is the number of interleaved connections (default 3).
	Conns int
	// Hot is the number of updates of one hot row from four connections,
	// made in the first phase (0 for none).
	Hot int
	// BigTxn is the number of rows inserted by one transaction in the
	// first phase (0 for none).
	BigTxn int
	// Kills is the number of SIGKILLs of sync at random operations, each
	// followed by a restart.
	Kills int
	// Restarts is the number of source server restarts at random
	// operations, made by Restart while sync runs: sync must wait the
	// server out and go on. The fuzzer first commits its open
	// transactions, so that the statements stay those of the seed.
	Restarts int
	Restart  func(ctx context.Context) error
	// DynamoFaults is the share of sync's BatchWriteItem requests that
	// fail through internal/faultproxy (throttles, 5xx, resets before and
	// after the write, partial batches, in equal parts); 0 for none. The
	// oracle's migrate and verify reach DynamoDB directly.
	DynamoFaults float64
	// Large is the chance that a text or binary value is 8-16 KB
	// (default 0.03).
	Large float64
	// StateDynamo keeps sync's state in a DynamoDB table of its own
	// (--state dynamodb://, through the fault proxy when there is one),
	// with a lease of 2 s: every kill then resumes from the state table,
	// under a lease the killed sync still holds.
	StateDynamo bool

	Repo      string // repository root (configs and testdata)
	Bin       string // the dynafold binary
	ServerDSN string // the engine's server, without a database
	Endpoint  string // DynamoDB
	Work      string // a directory for sync's state (a temporary one when empty)
	// Log receives progress lines (nil for none).
	Log io.Writer
	// Trace receives every statement and its outcome (nil for none).
	Trace io.Writer
	// Keep leaves the database and tables in place after a divergence.
	Keep bool
}

// Result is what a run did and found.
type Result struct {
	Engine     string `json:"engine"`
	Design     string `json:"design"`
	Seed       uint64 `json:"seed"`
	Ops        int    `json:"ops"`
	Statements int    `json:"statements"`
	Failed     int    `json:"failed_operations"`
	Committed  int    `json:"transactions_committed"`
	RolledBack int    `json:"transactions_rolled_back"`
	Savepoints int    `json:"savepoints_rolled_back"`
	Kills      int    `json:"kills"`
	Restarts   int    `json:"source_restarts"`
	// FaultsInjected counts sync's DynamoDB requests the fault proxy failed.
	FaultsInjected int64 `json:"dynamodb_faults_injected"`
	// StateDynamo says sync kept its state in DynamoDB (Options).
	StateDynamo bool `json:"state_dynamodb,omitempty"`
	Phases      int  `json:"phases"`
	// DDL is the schema changes made (DDLRate and DDLAt).
	DDL   DDLCounts `json:"ddl"`
	Items int       `json:"items_compared"`
	// SyncRSS is the largest peak RSS of the sync processes, in bytes.
	SyncRSS    int64       `json:"sync_peak_rss_bytes"`
	Seconds    float64     `json:"seconds"`
	Divergence *Divergence `json:"divergence,omitempty"`
	Database   string      `json:"database,omitempty"`
	// Digest is a hash of every statement the run made: runs of one seed
	// and options have the same.
	Digest  string        `json:"statements_digest"`
	Elapsed time.Duration `json:"-"`
	opts    Options
}

// Reproduce is the command that runs this seed again.
func (r *Result) Reproduce() string {
	if r.opts.Restarts > 0 {
		// Restarts commit the open transactions first: they change the
		// statements, so they are part of the seed's run.
		return r.reproduce() + fmt.Sprintf(" --restarts %d", r.opts.Restarts)
	}
	return r.reproduce()
}

func (r *Result) reproduce() string {
	cmd := fmt.Sprintf("dynafold-bench syncfuzz --engine %s --design %s --ops %d --seed %d --phase-ops %d --ddl-at %d --conns %d --hot %d --big-txn %d --dynamo-faults %g",
		r.Engine, r.Design, r.Ops, r.Seed, r.opts.PhaseOps, r.opts.DDLAt, r.opts.Conns, r.opts.Hot, r.opts.BigTxn, r.opts.DynamoFaults)
	switch rate := r.opts.DDLRate; {
	case rate < 0:
		cmd += " --ddl-rate 0"
	case rate != DefaultDDLRate:
		cmd += fmt.Sprintf(" --ddl-rate %g", rate)
	}
	if r.opts.StateDynamo {
		cmd += " --state-dynamo"
	}
	return cmd
}

// fuzzer is one run's state.
type fuzzer struct {
	o     Options
	d     dialect
	roles *roles
	s     *schema
	v     *values
	db    *sql.DB
	dsn   string
	log   *opLog
	res   *Result
	// mapped are the fuzzed tables the mapping reads; unmapped is the
	// fuzzer's own table, which no item comes from.
	mapped   []*table
	unmapped *table
	// reads is what the compiled mapping reads, for the schema changes.
	reads *reads
	// ddl draws the schema changes.
	ddl *ddlDraws
	// added counts columns added to mapped tables.
	added int
	// remade holds the "table.column"s dropped and added again since
	// sync last caught up, and so judged every change before (check).
	remade map[string]bool
	// known holds, per table, every primary key (as literals) the table
	// started with or the fuzzer wrote, for pick.
	known map[string][][]string
	// cascadeLeft is the deletes the current cascade may still make.
	cascadeLeft int
}

const unmappedTable = "fz_unmapped"

// Run fuzzes one design on one engine. An error is a failure of the
// harness (a service down, a design that does not load); a divergence is
// in the Result.
func Run(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	if o.Conns <= 0 {
		o.Conns = 3
	}
	if o.PhaseOps <= 0 {
		o.PhaseOps = 2500
	}
	if o.DDLAt == 0 {
		o.DDLAt = o.Ops / 2
	}
	if o.Large == 0 {
		o.Large = 0.03
	}
	if o.DDLRate == 0 {
		o.DDLRate = DefaultDDLRate
	}
	d, err := dialectFor(o.Engine)
	if err != nil {
		return nil, err
	}
	roles, err := readRoles(o.Repo, o.Design)
	if err != nil {
		return nil, err
	}
	f := &fuzzer{o: o, d: d, roles: roles, log: &opLog{}, remade: map[string]bool{},
		res: &Result{Engine: o.Engine, Design: o.Design.Name, Seed: o.Seed, Ops: o.Ops}}
	f.v = &values{rng: rand.New(rand.NewPCG(o.Seed, 0x5eed)), d: d, roles: roles, large: o.Large}
	f.ddl = newDDLDraws(o, f)
	f.res.opts = o
	err = f.run(ctx)
	if err == nil && f.res.DDL.made()+f.res.DDL.Refused+f.res.DDL.Skipped > 0 {
		f.printf("%s", &f.res.DDL)
	}
	f.res.Digest = f.log.digest()
	if f.res.Divergence != nil {
		f.res.Divergence.Statements = f.log.last()
	}
	f.res.Elapsed = time.Since(start)
	f.res.Seconds = f.res.Elapsed.Seconds()
	return f.res, err
}

func (f *fuzzer) printf(format string, args ...any) {
	if f.o.Log != nil {
		fmt.Fprintf(f.o.Log, format+"\n", args...)
	}
}

// setup creates the source database and the table, and starts sync.
func (f *fuzzer) setup(ctx context.Context) (*cli, error) {
	name := fmt.Sprintf("fz_%s_%d_%d", f.o.Design.Name, f.o.Seed%1_000_000, os.Getpid())
	dsn, err := testenv.Recreate(ctx, f.o.Engine, f.o.ServerDSN, name)
	if err != nil {
		return nil, fmt.Errorf("creating database %s: %w", name, err)
	}
	f.dsn, f.res.Database = dsn, name
	data, err := os.ReadFile(filepath.Join(f.o.Repo, fmt.Sprintf(f.o.Design.Data, f.o.Engine)))
	if err != nil {
		return nil, err
	}
	if err := testenv.Exec(ctx, f.o.Engine, dsn, string(data)); err != nil {
		return nil, fmt.Errorf("loading %s: %w", f.o.Design.Data, err)
	}
	create := fmt.Sprintf("CREATE TABLE %s (id integer PRIMARY KEY, note text)", f.d.quote(unmappedTable))
	if err := testenv.Exec(ctx, f.o.Engine, dsn, create); err != nil {
		return nil, err
	}
	if f.db, err = sql.Open(f.d.sqlDriver(), f.d.fuzzDSN(dsn)); err != nil {
		return nil, err
	}
	if err := f.introspect(ctx); err != nil {
		return nil, err
	}
	if err := f.v.load(ctx, f.db, f.s); err != nil {
		return nil, err
	}
	if err := f.loadKeys(ctx); err != nil {
		return nil, err
	}
	if f.reads, err = readMapping(ctx, f.o.Engine, dsn, filepath.Join(f.o.Repo, f.o.Design.Config), f.o.Design.Vars); err != nil {
		return nil, fmt.Errorf("reading what the mapping reads: %w", err)
	}
	work := f.o.Work
	if work == "" {
		if work, err = os.MkdirTemp("", "syncfuzz-"); err != nil {
			return nil, err
		}
	}
	table := strings.ReplaceAll(fmt.Sprintf("fz-%s-%s-%d-%d", f.o.Design.Name, f.o.Engine, f.o.Seed%1_000_000, os.Getpid()), "_", "-")
	c := &cli{bin: f.o.Bin, dir: work, env: environment(), timeout: commandTimeout(f.o.BigTxn),
		flags: []string{"--config", filepath.Join(f.o.Repo, f.o.Design.Config), "--source-dsn", dsn, "--endpoint", f.o.Endpoint, "--table", table}}
	for _, v := range f.o.Design.Vars {
		c.flags = append(c.flags, "--var", v)
	}
	if _, err := c.must(ctx, "table", "create"); err != nil {
		return nil, err
	}
	return c, nil
}

// introspect reads the schema again (after a column was added).
func (f *fuzzer) introspect(ctx context.Context) error {
	s, err := introspect(ctx, f.d, f.db)
	if err != nil {
		return err
	}
	f.s, f.mapped = s, nil
	for _, name := range f.roles.mappedTables() {
		t := s.tables[name]
		if t == nil {
			return fmt.Errorf("the mapping reads table %s, which the source lacks", name)
		}
		if len(t.pk) == 0 {
			return fmt.Errorf("table %s has no primary key", name)
		}
		f.mapped = append(f.mapped, t)
	}
	f.unmapped = s.tables[unmappedTable]
	return nil
}

func (f *fuzzer) run(ctx context.Context) error {
	c, err := f.setup(ctx)
	if err != nil {
		return err
	}
	defer func() { f.res.SyncRSS = c.syncRSS.Load() }()
	defer func() {
		if f.db != nil {
			f.db.Close()
		}
	}()
	plan, err := mappingSchema(filepath.Join(f.o.Repo, f.o.Design.Config), c.flags)
	if err != nil {
		return err
	}
	or, err := newOracle(ctx, f.o.Endpoint, plan)
	if err != nil {
		return err
	}
	table := flagValue(c.flags, "--table")
	if f.o.DynamoFaults > 0 {
		r := f.o.DynamoFaults / 6
		proxy, err := faultproxy.New(f.o.Endpoint, faultproxy.Config{Throttle: r, Throttling: r, Partial: r, Error5xx: r,
			Reset: r, ResetAfter: r, Seed: f.o.Seed})
		if err != nil {
			return err
		}
		url, stop, err := proxy.Start()
		if err != nil {
			return err
		}
		// Stopped last (defers run in reverse): sync cleanup goes through
		// it too.
		defer func() {
			st := proxy.Stats()
			f.res.FaultsInjected = st.Throttle + st.Throttling + st.Error500 + st.Error503 + st.Reset + st.ResetAfter + st.Partial
			stop()
		}()
		c.syncFlags = withFlag(c.flags, "--endpoint", url)
	}
	if f.o.StateDynamo {
		stateTable, err := f.stateTable(ctx, c)
		if err != nil {
			return err
		}
		// Deleted after sync cleanup, which runs first (defers run in
		// reverse).
		defer or.deleteTable(context.Background(), stateTable)
	}
	defer func() {
		keep := f.o.Keep && f.res.Divergence != nil
		_, _, _ = c.run(context.Background(), "sync", "cleanup")
		if !keep {
			or.deleteTable(context.Background(), table)
			_ = testenv.Exec(context.Background(), f.o.Engine, f.o.ServerDSN, dropDatabase(f.o.Engine, f.res.Database))
		}
	}()
	sessions, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range sessions {
			// A run that ends in a divergence or an error may leave a
			// transaction open; closing a sql.Conn only returns it to the
			// pool, where its locks would hold up the DROP DATABASE of
			// the cleanup for ever (MariaDB's metadata locks).
			if s.open {
				_, _ = s.conn.ExecContext(context.Background(), "ROLLBACK")
			}
			s.conn.Close()
		}
	}()
	// Kill points come from a generator of their own, so that the
	// operations are the same with and without kills.
	kills := map[int]bool{}
	killRng := rand.New(rand.NewPCG(f.o.Seed, 0x4b111))
	for range f.o.Kills {
		kills[killRng.IntN(max(f.o.Ops, 1))] = true
	}
	// So do restart points, on one of their own.
	restarts := map[int]bool{}
	if f.o.Restart != nil {
		restartRng := rand.New(rand.NewPCG(f.o.Seed, 0x2e57a27))
		for range f.o.Restarts {
			restarts[restartRng.IntN(max(f.o.Ops, 1))] = true
		}
	}
	bg, err := c.startSync()
	if err != nil {
		return err
	}
	defer func() {
		if bg != nil {
			bg.kill()
			f.noteSync(bg.out.String())
		}
	}()
	op := 0
	phases := max(1, (f.o.Ops+f.o.PhaseOps-1)/f.o.PhaseOps)
	f.res.Phases = phases
	for phase := 1; phase <= phases; phase++ {
		end := min(f.o.Ops, phase*f.o.PhaseOps)
		if phase == 1 {
			// The large transaction must reach sync through its stream,
			// not its initial load: on PostgreSQL a slot being created
			// waits for it and then loads it from the snapshot.
			if err := bg.awaitStreaming(); err != nil {
				return err
			}
			if err := f.firstPhaseExtras(ctx, sessions); err != nil {
				return err
			}
		}
		for ; op < end; op++ {
			if kills[op] {
				bg.kill()
				f.noteSync(bg.out.String())
				f.res.Kills++
				if bg, err = c.startSync(); err != nil {
					return err
				}
			}
			if restarts[op] {
				if sessions, err = f.restartSource(ctx, sessions, bg); err != nil {
					return fmt.Errorf("restarting the source before operation %d: %w", op, err)
				}
				f.res.Restarts++
			}
			// One draw per operation, whether or not it is one (ddlDraws).
			if due := f.ddl.due(); due && op != f.o.DDLAt {
				if bg, err = f.schemaChange(ctx, c, sessions, bg, phase, op); err != nil {
					return fmt.Errorf("operation %d, a schema change: %w", op, err)
				}
				if f.res.Divergence != nil {
					return nil
				}
			} else if err := f.step(ctx, sessions, op, phase); err != nil {
				return fmt.Errorf("operation %d: %w", op, err)
			}
			if bg.exited() {
				f.res.Divergence = &Divergence{Phase: phase, Op: op, Sync: tail(bg.out.String(), 30)}
				return nil
			}
		}
		if err := f.settle(ctx, sessions); err != nil {
			return err
		}
		d, err := f.check(ctx, c, or, bg, table, phase, op)
		bg = nil
		if err != nil {
			return err
		}
		if !d.empty() {
			f.res.Divergence = d
			return nil
		}
		if phase < phases {
			if bg, err = c.startSync(); err != nil {
				return err
			}
		}
	}
	return nil
}

// verifyDifferences is verify's exit code when it found differences
// (docs/operations.md).
const verifyDifferences = 3

// verifyOutcome reads the oracle's verify: the differences it printed, or
// an error when it could not check at all (dynalite out of memory, a
// refused connection). That failure says nothing about sync, and reported
// as a divergence with no diverging item it would send its reader hunting
// for a bug: it is the harness's (exit 2).
func verifyOutcome(code int, out string) (string, error) {
	switch code {
	case 0:
		return "", nil
	case verifyDifferences:
		return tail(out, 30), nil
	default:
		return "", fmt.Errorf("dynafold verify could not check (exit %d), which is not a divergence:\n%s", code, tail(out, 20))
	}
}

// check stops sync, lets it catch up, and compares.
func (f *fuzzer) check(ctx context.Context, c *cli, or *oracle, bg *background, table string, phase, op int) (*Divergence, error) {
	started := time.Now()
	err := bg.stop()
	f.noteSync(bg.out.String())
	if err != nil {
		return &Divergence{Phase: phase, Op: op, Sync: err.Error()}, nil
	}
	code, out, err := c.run(ctx, "sync", "--until-caught-up", "--progress", "none")
	if err != nil {
		return nil, err
	}
	f.noteSync(out)
	if code != 0 {
		return &Divergence{Phase: phase, Op: op, Sync: fmt.Sprintf("sync --until-caught-up exited %d:\n%s", code, tail(out, 30))}, nil
	}
	clear(f.remade)
	caught := time.Since(started)
	fresh := fmt.Sprintf("%s-o%d", table, phase)
	oc := &cli{bin: c.bin, dir: c.dir, env: c.env, timeout: c.timeout, flags: withFlag(c.flags, "--table", fresh)}
	defer or.deleteTable(context.Background(), fresh)
	if _, err := oc.must(ctx, "table", "create"); err != nil {
		return nil, err
	}
	if _, err := oc.must(ctx, "migrate", "--progress", "none"); err != nil {
		return nil, err
	}
	want, err := or.scan(ctx, fresh)
	if err != nil {
		return nil, err
	}
	got, err := or.scan(ctx, table)
	if err != nil {
		return nil, err
	}
	d := or.compare(want, got)
	d.Phase, d.Op = phase, op
	code, out, err = c.run(ctx, "verify")
	if err != nil {
		return nil, err
	}
	if d.Verify, err = verifyOutcome(code, out); err != nil {
		return nil, err
	}
	f.res.Items += len(want)
	f.printf("phase %d/%d: %d operations, %d statements (%d operations failed), %d transactions committed, %d rolled back; caught up in %.1fs; %d items compared",
		phase, f.res.Phases, op, f.res.Statements, f.res.Failed, f.res.Committed, f.res.RolledBack, caught.Seconds(), len(want))
	return d, nil
}

// open connects the sessions.
func (f *fuzzer) open(ctx context.Context) ([]*session, error) {
	var out []*session
	for i := range f.o.Conns {
		conn, err := f.db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		for _, stmt := range f.d.session() {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return nil, fmt.Errorf("%s: %w", stmt, err)
			}
		}
		out = append(out, &session{id: i, conn: conn})
	}
	return out, nil
}

// txnSize draws how many operations a transaction takes: mostly one,
// sometimes a few, now and then hundreds.
func (f *fuzzer) txnSize() int {
	switch r := f.v.rng.Float64(); {
	case r < 0.5:
		return 1
	case r < 0.8:
		return 2 + f.v.rng.IntN(4)
	case r < 0.98:
		return 6 + f.v.rng.IntN(25)
	default:
		return 100 + f.v.rng.IntN(200)
	}
}

// step runs operation number op on a session drawn by the seed.
func (f *fuzzer) step(ctx context.Context, sessions []*session, op, phase int) error {
	// DDL once in the middle of the run, between transactions.
	if op == f.o.DDLAt && op > 0 {
		if err := f.settle(ctx, sessions); err != nil {
			return err
		}
		return f.addColumn(ctx, sessions[0])
	}
	if f.v.chance(0.002) {
		// TRUNCATE of a table no item comes from, between transactions
		// (on MySQL it commits the open one).
		if err := f.settle(ctx, sessions); err != nil {
			return err
		}
		return f.truncate(ctx, sessions[0])
	}
	s := sessions[f.v.rng.IntN(len(sessions))]
	if !s.open {
		if err := f.exec(ctx, s, "BEGIN"); err != nil {
			return err
		}
		s.open, s.left, s.rollback = true, f.txnSize(), f.v.chance(0.05)
		if s.left > 1 && f.v.chance(0.1) {
			// Part of the transaction is undone by ROLLBACK TO SAVEPOINT.
			if err := f.exec(ctx, s, "SAVEPOINT u"); err != nil {
				return err
			}
			s.undo = 1 + f.v.rng.IntN(s.left)
		}
	}
	if err := f.operation(ctx, sessions, s); err != nil {
		return err
	}
	s.left--
	if s.undo > 0 {
		s.undo--
		if s.undo == 0 {
			f.res.Savepoints++
			if err := f.exec(ctx, s, "ROLLBACK TO SAVEPOINT u"); err != nil {
				return f.abandon(ctx, s, err)
			}
		}
	}
	if s.left <= 0 {
		return f.finish(ctx, s)
	}
	return nil
}

// finish ends the session's transaction as it was drawn to end.
func (f *fuzzer) finish(ctx context.Context, s *session) error {
	end := "COMMIT"
	if s.rollback {
		end = "ROLLBACK"
	}
	err := f.exec(ctx, s, end)
	s.open, s.undo = false, 0
	if err != nil {
		return err
	}
	if s.rollback {
		f.res.RolledBack++
	} else {
		f.res.Committed++
	}
	return nil
}

// abandon rolls back a transaction the server aborted (a MySQL deadlock
// rolls back the whole transaction, savepoints included).
func (f *fuzzer) abandon(ctx context.Context, s *session, cause error) error {
	if !serverError(cause) {
		return cause
	}
	s.open, s.undo = false, 0
	f.res.RolledBack++
	return f.exec(ctx, s, "ROLLBACK")
}

// settle commits every open transaction, in session order.
// restartSource commits the open transactions, restarts the source
// server under the running sync, waits until sync says the source is back,
// and opens the sessions again.
func (f *fuzzer) restartSource(ctx context.Context, sessions []*session, bg *background) ([]*session, error) {
	if err := f.settle(ctx, sessions); err != nil {
		return nil, err
	}
	// A sync just started again after a kill meets a restart during its
	// start-up as a failed start, not as a fault it waits out: restart
	// only a streaming sync.
	if err := bg.awaitStreaming(); err != nil {
		return nil, err
	}
	back := strings.Count(bg.out.String(), sourceBack)
	for _, s := range sessions {
		s.conn.Close()
	}
	f.db.Close()
	f.printf("restarting the source server")
	if err := f.o.Restart(ctx); err != nil {
		return nil, err
	}
	// Sync may be reading the log or between rounds: it meets the
	// restart when it next needs the server, at the latest at its next
	// status update to the server.
	// A sync that ended instead is reported by the caller.
	for deadline := time.Now().Add(2 * time.Minute); strings.Count(bg.out.String(), sourceBack) == back && !bg.exited(); {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("sync did not say the source was back within 2 minutes of its restart:\n%s", tail(bg.out.String(), 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	var err error
	if f.db, err = sql.Open(f.d.sqlDriver(), f.d.fuzzDSN(f.dsn)); err != nil {
		return nil, err
	}
	return f.open(ctx)
}

// sourceBack is what sync logs when the source answers again after a
// fault it waited out.
const sourceBack = "the source is back; sync goes on"

func (f *fuzzer) settle(ctx context.Context, sessions []*session) error {
	for _, s := range sessions {
		if s.open {
			s.rollback = false
			if err := f.finish(ctx, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// operation runs one drawn operation inside a savepoint: a statement the
// server refuses (a constraint, a lock held by another session) undoes
// the operation and the transaction goes on.
func (f *fuzzer) operation(ctx context.Context, sessions []*session, s *session) error {
	if err := f.exec(ctx, s, "SAVEPOINT o"); err != nil {
		return err
	}
	t := f.mapped[f.v.rng.IntN(len(f.mapped))]
	var err error
	switch r := f.v.rng.IntN(100); {
	case r < 32:
		err = f.insert(ctx, s, t)
	case r < 68:
		err = f.update(ctx, s, t)
	case r < 82:
		err = f.remove(ctx, s, t)
	case r < 90:
		err = f.rekey(ctx, s, t)
	case r < 97:
		err = f.insert(ctx, s, f.unmapped)
	default:
		err = f.update(ctx, s, f.unmapped)
	}
	if err == nil {
		return f.exec(ctx, s, "RELEASE SAVEPOINT o")
	}
	if !errors.Is(err, errNoRow) && !serverError(err) {
		return err
	}
	f.res.Failed++
	if rerr := f.exec(ctx, s, "ROLLBACK TO SAVEPOINT o"); rerr != nil {
		return f.abandon(ctx, s, rerr)
	}
	return nil
}

// truncate empties the unmapped table (never inside a transaction: on
// MySQL TRUNCATE commits it).
func (f *fuzzer) truncate(ctx context.Context, s *session) error {
	return f.execBetween(ctx, s, "TRUNCATE TABLE "+f.d.quote(unmappedTable))
}

// execBetween runs a statement that takes a table lock (DDL, TRUNCATE,
// VACUUM FULL) between the fuzzer's transactions. Sync's own reads can
// hold it up for a while: a round holds its read transaction while it
// writes, which under injected DynamoDB faults takes seconds, and
// MariaDB's start-up probes a row of whatever table the binlog's last
// transaction wrote (CI once met a TRUNCATE refused at once under the
// session's innodb_lock_wait_timeout = 0). A lock wait is retried for up
// to two minutes, then reported with the server's sessions (a harness
// error: the statement has not run); the retries are not logged: the
// run is the same either way.
func (f *fuzzer) execBetween(ctx context.Context, s *session, stmt string) error {
	var err error
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err = s.conn.ExecContext(ctx, stmt); err == nil || !f.d.isLockWait(err) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: held up for 2 minutes (%w); the server's sessions on the database:\n%s", stmt, err, f.sessionsNow(ctx))
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	f.log.statement(s.id, stmt)
	f.res.Statements++
	if f.o.Trace != nil {
		fmt.Fprintf(f.o.Trace, "[%d] %s -> ok\n", s.id, stmt)
	}
	return nil
}

// addColumn adds an unmapped column to a mapped table while sync
// streams; later statements write it too.
func (f *fuzzer) addColumn(ctx context.Context, s *session) error {
	t := f.mapped[f.v.rng.IntN(len(f.mapped))]
	f.added++
	if err := f.execBetween(ctx, s, f.d.addColumn(t.name, fmt.Sprintf("fz_extra_%d", f.added))); err != nil {
		return err
	}
	f.res.DDL.count("add_column", goesOn)
	f.printf("added column fz_extra_%d to %s", f.added, t.name)
	if err := f.introspect(ctx); err != nil {
		return err
	}
	return f.v.refresh(ctx, f.db, f.s)
}

// serverError reports whether err is the server refusing a statement,
// which the fuzzer expects now and then, rather than a broken connection.
func serverError(err error) bool {
	var pe *pgconn.PgError
	var me *mysql.MySQLError
	return errors.As(err, &pe) || errors.As(err, &me)
}

// firstPhaseExtras runs the hot row and the large transaction.
func (f *fuzzer) firstPhaseExtras(ctx context.Context, sessions []*session) error {
	if f.o.BigTxn > 0 {
		if err := f.bigTxn(ctx, sessions[0]); err != nil {
			return fmt.Errorf("large transaction: %w", err)
		}
	}
	if f.o.Hot > 0 {
		if err := f.hotRow(ctx, sessions[0]); err != nil {
			return fmt.Errorf("hot row: %w", err)
		}
	}
	return nil
}

// bigTxn inserts BigTxn rows in one transaction. Its statements take no
// savepoints: PostgreSQL slows down with every subtransaction a
// transaction holds (a 100,000-row one took 190 s with them), and fresh
// keys under committed parents are rarely refused. If one is, the
// transaction is rolled back and drawn again: the rng has moved on, so
// the retry is as determined by the seed as the first try.
func (f *fuzzer) bigTxn(ctx context.Context, s *session) error {
	started := time.Now()
	for attempt := 1; ; attempt++ {
		err := f.bigTxnOnce(ctx, s)
		if err == nil {
			break
		}
		if !serverError(err) || attempt == 5 {
			return err
		}
		f.printf("the large transaction was refused (%v); drawn again", err)
		if err := f.exec(ctx, s, "ROLLBACK"); err != nil {
			return err
		}
		f.res.RolledBack++
	}
	f.res.Committed++
	f.printf("one transaction of %d rows committed in %.1fs", f.o.BigTxn, time.Since(started).Seconds())
	return nil
}

func (f *fuzzer) bigTxnOnce(ctx context.Context, s *session) error {
	if err := f.exec(ctx, s, "BEGIN"); err != nil {
		return err
	}
	for done := 0; done < f.o.BigTxn; {
		err := f.insert(ctx, s, f.mapped[f.v.rng.IntN(len(f.mapped))])
		switch {
		case errors.Is(err, errNoRow):
			continue // a table whose parent is empty
		case err != nil:
			return err
		}
		done++
	}
	return f.exec(ctx, s, "COMMIT")
}

// hotRow updates one row from four connections at once: sync must end
// with the row as the last commit left it, whatever order the four
// sessions' commits took.
func (f *fuzzer) hotRow(ctx context.Context, s *session) error {
	var t *table
	var col *column
	for _, cand := range f.mapped {
		for _, c := range cand.cols {
			if !c.skip && (c.kind == kInt || c.kind == kText) && !cand.inUnique(c.name) && cand.fkOf(c.name) == nil &&
				!f.roles.isKey(cand.name, c.name) && !f.roles.isIndex(cand.name, c.name) {
				t, col = cand, c
				break
			}
		}
		if t != nil {
			break
		}
	}
	if t == nil {
		return nil
	}
	pk, err := f.pick(ctx, s, t, t.pk)
	if errors.Is(err, errNoRow) {
		return nil
	}
	if err != nil {
		return err
	}
	stmt := fmt.Sprintf("UPDATE %s SET %s = %%s WHERE %s", f.d.quote(t.name), f.d.quote(col.name), f.where(t.pk, pk))
	f.log.statement(-1, fmt.Sprintf(stmt, "…")+fmt.Sprintf(" (%d times from 4 connections)", f.o.Hot))
	started := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(f.o.Seed, uint64(w)+1))
			vals := &values{rng: rng, d: f.d, roles: f.roles}
			conn, err := f.db.Conn(ctx)
			if err != nil {
				errs[w] = err
				return
			}
			defer conn.Close()
			for _, stmt := range append(f.d.session(), f.d.patient()) {
				if _, err := conn.ExecContext(ctx, stmt); err != nil {
					errs[w] = err
					return
				}
			}
			for i := w; i < f.o.Hot; i += 4 {
				v := vals.random(t, col)
				if _, err := conn.ExecContext(ctx, fmt.Sprintf(stmt, v)); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	f.res.Committed += f.o.Hot
	f.printf("hot row %s(%s).%s updated %d times from 4 connections in %.1fs", t.name, strings.Join(pk, ","), col.name, f.o.Hot, time.Since(started).Seconds())
	return nil
}

func dropDatabase(engine, name string) string {
	if engine == "postgres" {
		return `DROP DATABASE IF EXISTS "` + name + `" WITH (FORCE)`
	}
	return "DROP DATABASE IF EXISTS `" + name + "`"
}

// stateTable creates a sync state table of the run's own and adds it to
// sync's flags. The state endpoint is sync's endpoint (the fault proxy's,
// when faults are injected), so the state's requests meet the faults too.
func (f *fuzzer) stateTable(ctx context.Context, c *cli) (string, error) {
	name := flagValue(c.flags, "--table") + "-state"
	if _, err := c.must(ctx, "table", "create", "--state", "dynamodb://"+name); err != nil {
		return "", err
	}
	if c.syncFlags == nil {
		c.syncFlags = append([]string(nil), c.flags...)
	}
	c.syncFlags = append(c.syncFlags, "--state", "dynamodb://"+name, "--lease-duration", "2s")
	f.res.StateDynamo = true
	return name, nil
}

func flagValue(flags []string, name string) string {
	for i := 0; i+1 < len(flags); i++ {
		if flags[i] == name {
			return flags[i+1]
		}
	}
	return ""
}

func withFlag(flags []string, name, value string) []string {
	out := append([]string(nil), flags...)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == name {
			out[i+1] = value
		}
	}
	return out
}

// mappingSchema reads the target table's key from the mapping.
func mappingSchema(path string, flags []string) (*mapping.TableSchema, error) {
	cfg, err := mapping.Load(path)
	if err != nil {
		return nil, err
	}
	ts := &mapping.TableSchema{PK: mapping.KeyAttr{Name: cfg.Target.Key.PK}}
	if cfg.Target.Key.SK != "" {
		ts.SK = &mapping.KeyAttr{Name: cfg.Target.Key.SK}
	}
	return ts, nil
}
