// Package pipeline wires a migration: shard readers feed item builders,
// builders feed a batcher that interleaves partition keys, and writers send
// the batches, while a tracker moves each shard's checkpoint only past rows
// whose items are all acknowledged. It also reports progress and builds the
// run summary.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// Options tune a run. Zero values take the defaults noted.
type Options struct {
	// Readers is how many shards are read at once (--concurrency, default 4).
	Readers int
	// ShardsPerEntity is how many key ranges an entity is split into
	// (default 2×Readers, so that a slow range does not idle the others).
	ShardsPerEntity int
	// Builders is how many goroutines turn rows into items (default GOMAXPROCS).
	Builders int
	// Writers is how many BatchWriteItem requests are in flight (--writers, default 8).
	Writers int
	// PageSize is rows per keyset page (default DefaultPageSize).
	PageSize int
	// Window bounds the items the batcher holds while it gathers enough
	// partition keys to spread consecutive batches over (default 16384).
	Window int
	// DedupeBytes sizes the duplicate-key filter's first part (default:
	// 8 bytes per item the run's estimate expects, between 64 KiB and
	// 64 MiB; the filter grows past it when the run has more keys).
	DedupeBytes int
	// MaxInFlight bounds the source rows, nested child rows included, read
	// but not yet fully acknowledged (default 25,000): the bound on memory
	// when rows carry thousands of nested rows each.
	MaxInFlight int64
	// MaxRejects stops the run once more rows than this were skipped or
	// rejected (default: no limit; 0 means none allowed only when
	// MaxRejectsSet).
	MaxRejects    int64
	MaxRejectsSet bool
	// RejectFile receives rejected rows as JSON lines.
	RejectFile string
	// Grace is how long in-flight writes may finish after Stop (default 5s).
	Grace time.Duration
	// Stop is closed to stop reading and finish early (the first signal).
	Stop <-chan struct{}
	// FlushEvery is how often the checkpoint is persisted (default 1s).
	FlushEvery time.Duration
	// ExactCounts counts rows exactly up front for progress (default: estimates).
	ExactCounts bool
	Progress    Progress
	Logger      *slog.Logger
	// Reach, when set, waits out a source that stops accepting connections
	// mid-run, for all readers at once (see Retry.Reach).
	Reach Reacher
	// OnBuilt, when set, is called by the builders with each chunk of rows
	// whose items are built, before any of those items is sent to the
	// sink; an error stops the run. Live sync records there which item
	// keys each row produces. It is called concurrently.
	OnBuilt func(rows []BuiltRow) error
	// OnStart, if set, is called once the run knows what it resumes and
	// how much there is, before the first row is read: for announcing it.
	OnStart func(StartInfo)
}

// BuiltRow is one source row and the items built from it.
type BuiltRow struct {
	Entity *mapping.EntityPlan
	Key    []value.Value
	Items  []mapping.Item
}

// StartInfo is what a run knows before it reads.
type StartInfo struct {
	// Resumed: the checkpoint's saved positions are used.
	Resumed bool
	// RowsDone is rows the checkpoint holds as written (0 unless resumed).
	RowsDone int64
	// RowsEstimate is the rows of every entity (estimated unless
	// ExactCounts), -1 when some entity's count is unknown.
	RowsEstimate int64
}

func (o *Options) defaults() {
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.ShardsPerEntity <= 0 {
		o.ShardsPerEntity = 2 * o.Readers
	}
	if o.Builders <= 0 {
		o.Builders = runtime.GOMAXPROCS(0)
	}
	if o.Writers <= 0 {
		o.Writers = 8
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Window <= 0 {
		o.Window = 16384
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 25_000
	}
	if o.Grace <= 0 {
		o.Grace = 5 * time.Second
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Job is one migration: what to read, how to build items, where to write
// and where to keep progress.
type Job struct {
	Plan     *mapping.Plan
	Snapshot source.Snapshot
	Sink     sink.Sink
	Store    checkpoint.Store
	Meta     checkpoint.Meta
	// Force resumes a checkpoint made with a different fingerprint.
	Force bool
}

type run struct {
	job      Job
	opts     Options
	entities map[string]*entityRun
	order    []*entityRun
	policy   *policy
	dedupe   *dedupe
	gates    *splitGates
	started  time.Time
	// inFlight weighs rows between read and acknowledgement (see
	// Options.MaxInFlight).
	inFlight *semaphore.Weighted
	// rate watches the sink's write rate, when it has one.
	rate *rateWatch
	// meter measures the write rate between progress snapshots.
	meter progressMeter

	interrupted atomic.Bool
	// writers write the batches; starved counts readers waiting on the
	// in-flight budget: with the writers' Write calls begun, it tells the
	// flusher when the run waits on items a late-acknowledging sink holds.
	writers *sink.Writers
	starved atomic.Int32
	// writerErr is an error policy's verdict raised inside a sink callback,
	// returned by the writers after the Write that made the call.
	writerErr atomic.Pointer[error]
}

// entityRun holds one entity's plan and live counters.
type entityRun struct {
	plan  *mapping.EntityPlan
	stats *entityStats
}

// Run migrates job. It returns the summary and nil, ErrInterrupted,
// a *ResumableError or another error; the summary is filled in every case
// where the run got as far as reading.
func Run(ctx context.Context, job Job, opts Options) (*Summary, error) {
	opts.defaults()
	r := &run{job: job, opts: opts, entities: map[string]*entityRun{}, started: time.Now(), inFlight: semaphore.NewWeighted(opts.MaxInFlight), rate: newRateWatch(job.Sink)}
	r.meter.at = r.started
	for _, ep := range job.Plan.Entities {
		er := &entityRun{plan: ep, stats: newEntityStats()}
		r.entities[ep.Name] = er
		r.order = append(r.order, er)
	}
	resumed, err := job.Store.Open(ctx, job.Meta, job.Force)
	if err != nil {
		return nil, err
	}
	if resumed {
		opts.Logger.Info("resuming the saved run", "run_id", job.Meta.RunID, "started", job.Store.Started())
	} else {
		opts.Logger.Info("starting a new run", "run_id", job.Meta.RunID)
	}
	for _, er := range r.order {
		q := er.plan.Query
		shards, err := job.Store.Plan(ctx, er.plan.Name, func() ([]source.Range, error) {
			return job.Snapshot.Shards(ctx, q, opts.ShardsPerEntity)
		})
		if err != nil {
			return nil, fmt.Errorf("splitting entity %s into shards: %w", er.plan.Name, err)
		}
		er.stats.shards = len(shards)
		for _, s := range shards {
			er.stats.resumedRows += s.Rows
			er.stats.resumedItems += s.Items
		}
		if n, err := job.Snapshot.Count(ctx, q, source.Full, opts.ExactCounts); err == nil {
			er.stats.estimate = n
		} else {
			er.stats.estimate = -1
		}
	}
	if opts.OnStart != nil {
		si := StartInfo{Resumed: resumed}
		for _, er := range r.order {
			si.RowsDone += er.stats.resumedRows
			if er.stats.estimate < 0 || si.RowsEstimate < 0 {
				si.RowsEstimate = -1
			} else {
				si.RowsEstimate += er.stats.estimate
			}
		}
		opts.OnStart(si)
	}
	r.policy, err = newPolicy(opts.RejectFile, job.Meta.RunID, opts.MaxRejects, opts.MaxRejectsSet)
	if err != nil {
		return nil, err
	}
	defer r.policy.close()
	set := keySetFor(r.keysEstimate())
	if opts.DedupeBytes > 0 {
		set = newKeySet(opts.DedupeBytes)
	}
	r.dedupe = newDedupe(set, r)
	r.gates = newSplitGates()
	r.writers = &sink.Writers{Sink: job.Sink, N: r.opts.Writers, Check: r.writerVerdict}
	if err := job.Store.Flush(ctx); err != nil {
		return nil, err
	}

	runErr := r.stages(ctx)

	flushErr := job.Store.Flush(context.Background())
	if flushErr == nil {
		r.logSaved(ctx)
	}
	sum := r.summary(resumed)
	err = runErr
	switch {
	case runErr != nil:
	case flushErr != nil:
		err = fmt.Errorf("saving checkpoint: %w", flushErr)
	case r.interrupted.Load():
		return sum, ErrInterrupted
	default:
		if ferr := job.Store.Finish(ctx); ferr != nil {
			err = fmt.Errorf("saving checkpoint: %w", ferr)
		}
	}
	// A run Stop ended is interrupted, whatever the stages returned.
	sum.Failed = err != nil && !sum.Interrupted
	return sum, err
}

// keysEstimate is how many item keys the run expects: each entity's
// estimated rows times the items its mapping makes of a row (nested
// splits can add more), or -1 when some entity's count is unknown.
func (r *run) keysEstimate() int64 {
	var n int64
	for _, er := range r.order {
		if er.stats.estimate < 0 {
			return -1
		}
		n += er.stats.estimate * int64(max(len(er.plan.Items), 1))
	}
	return n
}

// Rows and items move between stages in chunks, not one by one: a channel
// operation per item would cost more than building the item.
const chunkRows = 64

func (r *run) stages(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	readCtx, stopReading := context.WithCancel(gctx)
	defer stopReading()
	writeCtx, stopWriting := context.WithCancel(gctx)
	defer stopWriting()

	// About a page of rows ahead of the builders, a few batches of items
	// ahead of the batcher.
	rows := make(chan []*ticket, max(r.opts.PageSize/chunkRows, 2))
	items := make(chan []*mapping.Item, 4*r.opts.Builders)
	batches := make(chan []*mapping.Item, r.opts.Writers)
	finished := make(chan struct{})

	// Stop: the first signal ends reading at once; writes in flight get
	// the grace period to be acknowledged (and so checkpointed).
	go func() {
		select {
		case <-r.opts.Stop:
			r.interrupted.Store(true)
			stopReading()
			select {
			case <-time.After(r.opts.Grace):
				stopWriting()
			case <-finished:
			}
		case <-finished:
		}
	}()

	g.Go(func() error {
		defer close(rows)
		return ReadShards(readCtx, r.opts.Readers, r.claim, func() ShardReader[*checkpoint.Shard] {
			return shardReader{r: r, out: rows}
		})
	})

	var builders sync.WaitGroup
	for i := 0; i < r.opts.Builders; i++ {
		builders.Add(1)
		g.Go(func() error {
			defer builders.Done()
			return r.builder(writeCtx, rows, items)
		})
	}
	g.Go(func() error {
		builders.Wait()
		defer close(items)
		if r.interrupted.Load() || gctx.Err() != nil {
			return nil
		}
		// Every row is built: settle the keys the filter flagged.
		return r.dedupe.settle(writeCtx, items)
	})

	g.Go(func() error {
		defer close(batches)
		return interleave(writeCtx, items, batches, r.opts.Window, r.gates)
	})

	writersDone := make(chan struct{})
	g.Go(func() error {
		defer close(writersDone)
		if err := r.write(writeCtx, batches); err != nil {
			return err
		}
		// The last batch is written: what the sink holds is made durable
		// (and acknowledged) before the run ends.
		return r.flushSink(writeCtx)
	})
	g.Go(func() error { return r.flusher(writeCtx, writersDone) })
	g.Go(func() error { return r.remover(writeCtx, writersDone) })

	// Persist progress and report it while the stages run.
	ticker := time.NewTicker(r.opts.FlushEvery)
	progressTick := time.NewTicker(time.Second)
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	defer ticker.Stop()
	defer progressTick.Stop()
	for {
		select {
		case err := <-done:
			close(finished)
			r.watchRate()
			if r.opts.Progress != nil {
				r.opts.Progress.Update(r.progress(true))
			}
			if err != nil && r.interrupted.Load() && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				err = nil
			}
			return err
		case <-ticker.C:
			if err := r.job.Store.Flush(gctx); err != nil && gctx.Err() == nil {
				r.opts.Logger.Warn("saving checkpoint failed; will retry", "error", err)
			} else if err == nil {
				r.logSaved(ctx)
			}
		case <-progressTick.C:
			r.watchRate()
			if r.opts.Progress != nil {
				r.opts.Progress.Update(r.progress(false))
			}
		}
	}
}

// claim hands the readers the checkpoint's shards still to read; none
// once reading is stopped (a signal), which is not an error.
func (r *run) claim(ctx context.Context) (*checkpoint.Shard, bool, error) {
	if ctx.Err() != nil {
		return nil, false, nil
	}
	return r.job.Store.Claim(ctx)
}

// shardReader streams the rows of the shards it is given to the builders.
type shardReader struct {
	r   *run
	out chan<- []*ticket
}

func (sr shardReader) ReadShard(ctx context.Context, shard *checkpoint.Shard) error {
	er := sr.r.entities[shard.Entity]
	if er == nil {
		// The mapping no longer has this entity (a forced resume).
		sr.r.job.Store.Done(shard)
		return nil
	}
	return sr.r.readShard(ctx, er, shard, sr.out)
}

func (shardReader) Finish(context.Context) error { return nil }

func (r *run) readShard(ctx context.Context, er *entityRun, shard *checkpoint.Shard, out chan<- []*ticket) error {
	r.opts.Logger.Debug("shard started", "entity", er.plan.Name, "shard", shard.ID, "resuming", shard.After != nil)
	tr := newTracker(shard, r.job.Store, r.inFlight)
	tr.onDone = func() {
		r.opts.Logger.Debug("shard done: every row acknowledged", "entity", er.plan.Name, "shard", shard.ID)
	}
	nkey := len(er.plan.Query.Key)
	er.stats.begin()
	chunk := make([]*ticket, 0, chunkRows)
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		er.stats.rowsRead.Add(int64(len(chunk)))
		select {
		case out <- chunk:
			chunk = make([]*ticket, 0, chunkRows)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	retry := Retry{Reach: r.opts.Reach, OnRetry: func(attempt int, err error) {
		r.opts.Logger.Warn("source connection lost; reading again after the last row", "entity", er.plan.Name, "shard", shard.ID, "attempt", attempt, "error", err)
		er.stats.readRetries.Add(1)
	}}
	err := ReadRetrying(ctx, r.job.Snapshot, er.plan, shard.Range, shard.After, r.opts.PageSize, retry, func(row value.Row, nested [][]value.Row) error {
		weight := int64(1)
		for _, n := range nested {
			weight += int64(len(n))
		}
		weight = min(weight, r.opts.MaxInFlight) // a row bigger than the budget still goes, alone
		if !r.inFlight.TryAcquire(weight) {
			// Send what is read before waiting, or the wait could be on
			// rows still sitting in this chunk.
			if err := flush(); err != nil {
				return err
			}
			r.starved.Add(1)
			err := r.inFlight.Acquire(ctx, weight)
			r.starved.Add(-1)
			if err != nil {
				return err
			}
		}
		chunk = append(chunk, tr.add(er, row, nested, nkey, weight))
		if len(chunk) == chunkRows {
			return flush()
		}
		return nil
	})
	// Rows read before a failure are sound: send them on.
	if ferr := flush(); ferr != nil && err == nil {
		err = ferr
	}
	switch {
	case ctx.Err() != nil:
		return nil // stopping: the shard resumes after its position
	case err != nil:
		return &ResumableError{Err: fmt.Errorf("reading entity %s shard %d: %w", er.plan.Name, shard.ID, err)}
	}
	tr.finishRead()
	r.opts.Logger.Debug("shard read to its end", "entity", er.plan.Name, "shard", shard.ID)
	return nil
}

// builder turns rows into items, a chunk of rows at a time.
func (r *run) builder(ctx context.Context, in <-chan []*ticket, out chan<- []*mapping.Item) error {
	arena := &mapping.Arena{}
	for chunk := range in {
		// One allocation for the chunk's items, never reused: a writer
		// may send an item again long after the chunk is built, and it
		// must send what was built (the arena's blocks are never reused
		// either).
		var slab []mapping.Item
		built := make([]*ticket, 0, len(chunk))
		var splits []splitRange
		for _, tk := range chunk {
			start := len(slab)
			var err error
			slab, err = tk.ent.plan.BuildNested(tk.row, tk.nested, slab, arena)
			tk.nested = nil // built: the items hold what is needed
			if err != nil {
				if perr := r.reject(tk, err); perr != nil {
					return perr
				}
				tk.release()
				continue
			}
			built = append(built, tk)
			n := len(slab) - start
			tk.items = int32(n)
			tk.pending.Add(int32(n))
			tk.ent.stats.itemsBuilt.Add(int64(n))
			for i := start; i < len(slab); i++ {
				slab[i].Origin = tk
				if sink.IsHead(&slab[i]) && (len(splits) == 0 || splits[len(splits)-1].tk != tk) {
					splits = append(splits, splitRange{tk, start, len(slab)})
				}
			}
		}
		if r.opts.OnBuilt != nil {
			if err := r.onBuilt(built, slab); err != nil {
				return err
			}
		}
		// Pointers are taken only now: Build may have moved the slab.
		for _, sr := range splits {
			sr.tk.split = newRowSplit(slab[sr.start:sr.end])
		}
		ready, err := r.dedupe.filter(ctx, slab, out)
		if err != nil {
			return err
		}
		// Every item of the chunk is counted in its row's pending count;
		// the builder's holds can go.
		for _, tk := range built {
			tk.release()
		}
		if len(ready) > 0 {
			select {
			case out <- ready:
			case <-ctx.Done():
				return nil
			}
		}
	}
	return nil
}

// onBuilt hands the chunk's built rows to Options.OnBuilt. The items of
// one chunk sit in slab in the order of built.
func (r *run) onBuilt(built []*ticket, slab []mapping.Item) error {
	rows := make([]BuiltRow, len(built))
	at := 0
	for i, tk := range built {
		n := int(tk.items)
		rows[i] = BuiltRow{Entity: tk.ent.plan, Key: tk.row[:len(tk.ent.plan.Query.Key)], Items: slab[at : at+n]}
		at += n
	}
	return r.opts.OnBuilt(rows)
}

// reject applies the entity's error policy to a row that cannot be written.
func (r *run) reject(tk *ticket, err error) error {
	var rerr *mapping.RowError
	if !errors.As(err, &rerr) {
		rerr = &mapping.RowError{Entity: tk.ent.plan.Name, SourceKey: tk.ent.plan.SourceKey(tk.row), Reason: err.Error(), Row: tk.ent.plan.RowValues(tk.row)}
	}
	tk.rejected.Store(true)
	r.gates.fail(tk)
	return r.policy.handle(tk.ent, rerr)
}

// write sends batches with the writers until there are none.
func (r *run) write(ctx context.Context, in <-chan []*mapping.Item) error {
	err := r.writers.Run(ctx, in, r)
	if err == nil {
		return nil
	}
	if v := r.writerVerdict(); v != nil && err == v {
		return err
	}
	if r.interrupted.Load() && ctx.Err() != nil {
		return nil // abandoned after the grace period; not acknowledged
	}
	var ue *sink.UnreachableError
	if errors.Is(err, sink.ErrGaveUp) || errors.As(err, &ue) {
		return &ResumableError{Err: err}
	}
	return err
}

// writerVerdict is the error policy's verdict raised inside a sink
// callback (writerErr), checked after every Write (sink.Writers.Check).
func (r *run) writerVerdict() error {
	if perr := r.writerErr.Load(); perr != nil {
		return *perr
	}
	return nil
}

// Acked implements sink.Results.
func (r *run) Acked(items []*mapping.Item) {
	// The shared counter is added to once per run of one entity's items,
	// not per item: eight writers adding to one cache line per item cost
	// more than the rest of the acknowledgement.
	var last *entityRun
	n := int64(0)
	for _, it := range items {
		tk := it.Origin.(*ticket)
		if tk.ent != last {
			if last != nil {
				last.stats.itemsWritten.Add(n)
			}
			tk.ent.stats.touch()
			last, n = tk.ent, 0
		}
		n++
		r.gates.acked(it)
		tk.release()
	}
	if last != nil {
		last.stats.itemsWritten.Add(n)
	}
}

// Rejected implements sink.Results: DynamoDB refused an item.
func (r *run) Rejected(it *mapping.Item, err error) {
	tk := it.Origin.(*ticket)
	r.gates.refused(it)
	if perr := r.reject(tk, err); perr != nil {
		r.writerErr.CompareAndSwap(nil, &perr)
	}
	tk.release()
}

// Retried implements sink.Results.
func (r *run) Retried(items []*mapping.Item, throttled bool) {
	seen := map[*entityRun]bool{}
	for _, it := range items {
		er := it.Origin.(*ticket).ent
		if seen[er] {
			continue
		}
		seen[er] = true
		er.stats.retried.Add(1)
		if throttled {
			er.stats.throttled.Add(1)
		}
	}
	r.opts.Logger.Debug("write request retried", "items", len(items), "throttled", throttled)
}
