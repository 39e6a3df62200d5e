package shadow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/dynafold/dynafold/metrics"
	"github.com/dynafold/dynafold/patterns"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// Positions is what the comparison needs of the change log: the source's
// current position, and the order of two positions. source.ChangeSource
// implements it.
type Positions interface {
	// Head is the source's current end of log. Called after a snapshot
	// is taken, from several goroutines at once; errors are the server's.
	Head(ctx context.Context) (source.Position, error)
	// Compare orders two positions (-1, 0, 1).
	Compare(a, b source.Position) int
}

// Sync is what the comparison reads of the running sync (*cdc.Live), from
// any goroutine.
type Sync interface {
	// Streaming reports whether the change stream is open.
	Streaming() bool
	// Confirmed is the position every change up to which is applied.
	Confirmed() (source.Position, bool)
	// Written is the end position of the last round whose writes began;
	// known is false for writes of no known position, any is false
	// before sync wrote anything (cdc.Live.Written).
	Written() (pos source.Position, known, any bool)
}

// Comparer is the comparing itself, split in its two halves so that the
// runner can wait between them; *patterns.Shadow with a DynamoDB client
// (Patterns) is the real one. Its methods are called concurrently.
type Comparer interface {
	// Patterns are the names of the patterns compared, by index.
	Patterns() []string
	// Tuples reads pattern i's parameter tuples in sess.
	Tuples(ctx context.Context, sess source.ReadOnlySession, i int) ([]value.Row, error)
	// Params says a tuple of pattern i, for the log.
	Params(i int, tuple value.Row) string
	// ReadSQL runs pattern i's SQL for tuple in sess.
	ReadSQL(ctx context.Context, sess source.ReadOnlySession, i int, tuple value.Row) (Answer, error)
	// Check compares DynamoDB's answer with a: nil when they agree;
	// global when the query read a global secondary index.
	Check(ctx context.Context, a Answer) (m *patterns.Mismatch, global bool, err error)
}

// Answer is the SQL half of one comparison, handed back to Check.
type Answer any

// Patterns is the real Comparer: the patterns package's comparison, with
// the DynamoDB client it queries.
func Patterns(sh *patterns.Shadow, api patterns.QueryAPI) Comparer { return realComparer{sh, api} }

type realComparer struct {
	sh  *patterns.Shadow
	api patterns.QueryAPI
}

type realAnswer struct{ a patterns.SQLAnswer }

func (c realComparer) Patterns() []string { return c.sh.Patterns() }
func (c realComparer) Tuples(ctx context.Context, sess source.ReadOnlySession, i int) ([]value.Row, error) {
	return c.sh.Tuples(ctx, sess, i)
}
func (c realComparer) Params(i int, tuple value.Row) string { return c.sh.Params(i, tuple) }
func (c realComparer) ReadSQL(ctx context.Context, sess source.ReadOnlySession, i int, tuple value.Row) (Answer, error) {
	a, err := c.sh.ReadSQL(ctx, sess, i, tuple)
	return realAnswer{a}, err
}
func (c realComparer) Check(ctx context.Context, a Answer) (*patterns.Mismatch, bool, error) {
	return c.sh.Check(ctx, c.api, a.(realAnswer).a)
}

// Defaults of Options.
const (
	DefaultRate = 10
	// DefaultWait bounds how long a comparison waits for sync to apply
	// past its snapshot before it is skipped.
	DefaultWait = 30 * time.Second
	// DefaultIndexDelay is how long a mismatch read from a global
	// secondary index (eventually consistent) waits before it is read
	// again.
	DefaultIndexDelay = time.Second
	// DefaultRefresh is how often a pattern's parameter tuples are read
	// again (params: sql), so that new rows are compared too.
	DefaultRefresh = time.Minute
	// poll is how often the confirmed position is looked at while a
	// comparison waits for it: sync confirms at most a round at a time.
	poll = 20 * time.Millisecond
)

// Options tune a Runner.
type Options struct {
	// Rate is comparisons started per second (each may read the source
	// twice and DynamoDB twice).
	Rate float64
	// Concurrency is how many comparisons may be in flight, most of
	// them waiting for sync; default 2 × Rate, at least 4 and at most
	// 64. Connections to the source are held only while reading, so the
	// shadow source's own pool stays small.
	Concurrency int
	Wait        time.Duration
	IndexDelay  time.Duration
	Refresh     time.Duration
	Seed        uint64
	Logger      *slog.Logger
	// Metrics may be nil.
	Metrics *metrics.Shadow
}

// Counts are one pattern's comparisons so far.
type Counts struct {
	Pattern     string `json:"pattern"`
	Comparisons int64  `json:"comparisons"`
	Mismatches  int64  `json:"mismatches"`
	Skipped     int64  `json:"skipped"`
}

// Runner compares the patterns of a Shadow continuously. Run it once.
type Runner struct {
	sh    Comparer
	src   source.ReadOnlyQuerier
	pos   Positions
	sync  Sync
	opts  Options
	names []string
	count []counts
}

type counts struct{ comparisons, mismatches, skipped atomic.Int64 }

// New returns a Runner that compares through sh, reads the source
// through src (a source of its own, apart from sync's connections),
// positions through pos and sync's progress through s.
func New(sh Comparer, src source.ReadOnlyQuerier, pos Positions, s Sync, opts Options) *Runner {
	if opts.Rate <= 0 {
		opts.Rate = DefaultRate
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = min(max(int(2*opts.Rate), 4), 64)
	}
	if opts.Wait <= 0 {
		opts.Wait = DefaultWait
	}
	if opts.IndexDelay <= 0 {
		opts.IndexDelay = DefaultIndexDelay
	}
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	names := sh.Patterns()
	return &Runner{sh: sh, src: src, pos: pos, sync: s, opts: opts, names: names, count: make([]counts, len(names))}
}

// Counts are every pattern's comparisons so far, in the mapping's order.
// Safe while Run runs.
func (r *Runner) Counts() []Counts {
	out := make([]Counts, len(r.names))
	for i, n := range r.names {
		c := &r.count[i]
		out[i] = Counts{Pattern: n, Comparisons: c.comparisons.Load(), Mismatches: c.mismatches.Load(), Skipped: c.skipped.Load()}
	}
	return out
}

// Run compares until ctx is done, then returns nil once the comparisons
// in flight have ended. It starts comparing once sync streams (the
// initial load is done). Nothing a comparison meets stops it.
func (r *Runner) Run(ctx context.Context) error {
	if len(r.names) == 0 {
		return nil
	}
	if !r.waitStreaming(ctx) {
		return nil
	}
	r.opts.Logger.Info("shadow comparison started", "patterns", len(r.names), "rate", r.opts.Rate)
	lim := rate.NewLimiter(rate.Limit(r.opts.Rate), 1)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.opts.Concurrency)
	n := len(r.names)
	q := &queue{r: r, rnd: rand.New(rand.NewPCG(r.opts.Seed, 42)), all: make([][]value.Row, n), left: make([][]value.Row, n), read: make([]time.Time, n)}
	for {
		if err := lim.Wait(gctx); err != nil {
			break
		}
		i, tuple, ok := q.next(gctx)
		if !ok {
			continue
		}
		g.Go(func() error {
			r.compare(gctx, i, tuple)
			return nil
		})
	}
	_ = g.Wait()
	return nil
}

func (r *Runner) waitStreaming(ctx context.Context) bool {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !r.sync.Streaming() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// queue hands out the next (pattern, tuple): the patterns in turn, each
// pattern's tuples in a shuffled order, again and again, read again from
// the source once Refresh old.
type queue struct {
	r       *Runner
	rnd     *rand.Rand
	pattern int
	// all are each pattern's tuples as last read, left those not yet
	// handed out in this pass, read when they were read.
	all, left [][]value.Row
	read      []time.Time
}

func (q *queue) next(ctx context.Context) (int, value.Row, bool) {
	r := q.r
	i := q.pattern
	q.pattern = (q.pattern + 1) % len(r.names)
	if len(q.left[i]) == 0 {
		if q.read[i].IsZero() || time.Since(q.read[i]) >= r.opts.Refresh {
			ts, err := r.readTuples(ctx, i)
			if err != nil {
				if ctx.Err() == nil {
					r.skip(i, "reading the parameters failed", err)
				}
				return 0, nil, false
			}
			q.all[i], q.read[i] = ts, time.Now()
		}
		q.left[i] = append(q.left[i][:0], q.all[i]...)
		q.rnd.Shuffle(len(q.left[i]), func(a, b int) { q.left[i][a], q.left[i][b] = q.left[i][b], q.left[i][a] })
		if len(q.left[i]) == 0 {
			return 0, nil, false
		}
	}
	t := q.left[i][0]
	q.left[i] = q.left[i][1:]
	return i, t, true
}

func (r *Runner) readTuples(ctx context.Context, i int) ([]value.Row, error) {
	sess, err := r.src.ReadOnly(ctx)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	return r.sh.Tuples(ctx, sess, i)
}

// errBehind is a comparison that sync did not catch up with in time.
var errBehind = errors.New("sync did not apply past the snapshot in time")

// rounds bounds the rounds of one comparison: a difference read while
// sync was writing changes past the SQL snapshot is read again, at most
// this many times in all, and the comparison is skipped if the source
// never stood still.
const rounds = 3

// compare makes one comparison of pattern i for tuple, in up to rounds
// rounds (see the package doc), and counts it.
func (r *Runner) compare(ctx context.Context, i int, tuple value.Row) {
	for range rounds {
		res, err := r.round(ctx, i, tuple)
		if err != nil {
			r.failed(ctx, i, tuple, err)
			return
		}
		if res.m == nil || res.still {
			r.compared(i, res.m)
			return
		}
		// DynamoDB may hold changes committed after the snapshot that
		// the SQL answer does not: the difference says nothing.
	}
	r.skip(i, "the source kept changing while DynamoDB was read", nil)
}

type roundResult struct {
	m *patterns.Mismatch
	// still: no change past the snapshot reached the table before
	// DynamoDB was read, so both answers are of one moment.
	still bool
}

// round reads the SQL answer in a new snapshot, waits until sync has
// applied past the snapshot's position, and compares DynamoDB's answer
// with it; a mismatch read from a global index is read again after
// IndexDelay. A difference is one of a single moment (still) only when
// no round of sync past the position sync had confirmed before the
// snapshot began writing before DynamoDB's answer was read: then
// the table held exactly what the source held at that position, which
// the snapshot sees. Values alone cannot tell it: a row moved away and
// back between two reads reads the same.
func (r *Runner) round(ctx context.Context, i int, tuple value.Row) (roundResult, error) {
	before, confirmed := r.sync.Confirmed()
	a, at, err := r.readSQL(ctx, i, tuple)
	if err != nil {
		return roundResult{}, err
	}
	if err := r.waitPast(ctx, at); err != nil {
		return roundResult{}, err
	}
	m, global, err := r.sh.Check(ctx, a)
	if err != nil {
		return roundResult{}, err
	}
	if m != nil && global {
		select {
		case <-time.After(r.opts.IndexDelay):
		case <-ctx.Done():
			return roundResult{}, ctx.Err()
		}
		if m, _, err = r.sh.Check(ctx, a); err != nil {
			return roundResult{}, err
		}
	}
	res := roundResult{m: m}
	if m != nil {
		w, known, any := r.sync.Written()
		res.still = !any || (confirmed && known && r.pos.Compare(w, before) <= 0)
	}
	return res, nil
}

// readSQL reads pattern i's SQL answer in a new read-only snapshot and
// the source's position after it: every transaction the snapshot sees
// committed before that position. The position is read once the
// snapshot is taken and read (it may be ended by then) (after its first query: PostgreSQL takes a
// repeatable-read snapshot at the first statement, MySQL at START
// TRANSACTION WITH CONSISTENT SNAPSHOT), so it is at or after the
// snapshot's own; waiting for it waits at most for the transactions
// committed in between, and never too little.
func (r *Runner) readSQL(ctx context.Context, i int, tuple value.Row) (Answer, source.Position, error) {
	sess, err := r.src.ReadOnly(ctx)
	if err != nil {
		return nil, "", err
	}
	a, err := r.sh.ReadSQL(ctx, sess, i, tuple)
	// The snapshot is no longer needed: the connection goes back to the
	// pool before Head takes one.
	sess.Close()
	if err != nil {
		return nil, "", err
	}
	at, err := r.pos.Head(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("reading the source's position: %w", err)
	}
	return a, at, nil
}

// waitPast waits until sync's confirmed position is at or past at, for
// at most Wait.
func (r *Runner) waitPast(ctx context.Context, at source.Position) error {
	deadline := time.NewTimer(r.opts.Wait)
	defer deadline.Stop()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if c, ok := r.sync.Confirmed(); ok && r.pos.Compare(c, at) >= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%w: waited %s for position %s", errBehind, r.opts.Wait, at)
		case <-t.C:
		}
	}
}

func (r *Runner) compared(i int, m *patterns.Mismatch) {
	r.count[i].comparisons.Add(1)
	r.opts.Metrics.Compared(r.names[i], m != nil)
	if m == nil {
		return
	}
	r.count[i].mismatches.Add(1)
	r.opts.Logger.Error("shadow comparison: DynamoDB's answer differs from the SQL's",
		"pattern", r.names[i], "params", m.ParamText(), "sql_rows", m.Rows, "items", m.Items,
		"report", "pattern "+r.names[i]+"\n"+m.Text())
}

// failed counts a comparison that could not be made; ended by ctx it is
// not counted at all (sync is stopping).
func (r *Runner) failed(ctx context.Context, i int, tuple value.Row, err error) {
	if ctx.Err() != nil {
		return
	}
	if errors.Is(err, errBehind) {
		r.skip(i, "sync did not apply past the snapshot in time", nil)
		return
	}
	r.skip(i, "a query failed", fmt.Errorf("parameters %s: %w", r.sh.Params(i, tuple), err))
}

func (r *Runner) skip(i int, why string, err error) {
	r.count[i].skipped.Add(1)
	r.opts.Metrics.Skipped(r.names[i])
	if err != nil {
		r.opts.Logger.Warn("shadow comparison skipped: "+why, "pattern", r.names[i], "error", err)
		return
	}
	r.opts.Logger.Debug("shadow comparison skipped: "+why, "pattern", r.names[i])
}
