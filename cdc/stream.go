package cdc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynafold/dynafold/metrics"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/source"
)

// Status is the live state of a streaming sync.
type Status struct {
	Time time.Time `json:"time"`
	// Phase is stream; State says more: streaming, reconnecting, stopping,
	// resnapshot.
	Phase string `json:"phase"`
	State string `json:"state"`
	// Fault is the transient fault being waited out, if any.
	Fault string `json:"fault,omitempty"`
	// LagSeconds is now minus the commit time of the oldest change not yet
	// applied; 0 when caught up. It grows while sync cannot apply.
	LagSeconds float64 `json:"lag_seconds"`
	// LagBytes is the log between the confirmed position and the source's
	// latest reported end.
	LagBytes      int64           `json:"lag_bytes"`
	ChangesPerSec float64         `json:"changes_per_second"`
	Confirmed     source.Position `json:"confirmed_position"`
	Run           Counters        `json:"this_run"`
	// FanOut is the items written and deleted per change, this run.
	FanOut   float64 `json:"items_per_change"`
	CaughtUp bool    `json:"caught_up"`
}

// streamRef is the stream being read and the change source it belongs
// to, for lag in bytes at any time.
type streamRef struct {
	st      source.Stream
	changes source.ChangeSource
}

// streamLoop is the state of one stream's reading.
type streamLoop struct {
	e        *engine
	st       source.Stream
	events   <-chan source.Event
	target   source.Position
	lastSave time.Time
	rate     *rateMeter
	// heartbeat and retention are when the heartbeat was last written and
	// the retained log last read.
	heartbeat, retention time.Time
	// shapesChecked is when the catalog was last compared with the
	// recorded shapes (SilentDDL).
	shapesChecked time.Time
}

// stream applies the change log from the confirmed position until stopped,
// failed, or (with a target) caught up.
func (e *engine) stream(ctx context.Context, target source.Position, sum *Summary) error {
	st, err := e.job.Changes.Stream(ctx, e.state.Confirmed, e.graph.needs)
	if err != nil {
		return err
	}
	defer st.Close()
	e.live.open.Store(&streamRef{st: st, changes: e.job.Changes})
	defer e.live.open.Store(nil)
	e.metrics.SetConnected(true)
	e.setState(metrics.StateStreaming)
	e.live.setStreaming(true)
	defer e.live.setStreaming(false)
	e.health.SetReady(true, "")
	if e.fault != nil && e.fault.side == sourceFault {
		e.recovered(metrics.StateStreaming)
	}
	// Changes made while sync was stopped, to a table no row change
	// touched since, are judged before anything else.
	if err := e.checkShapes(ctx, false); err != nil {
		return err
	}
	l := &streamLoop{e: e, st: st, events: st.Events(), target: target, rate: newRateMeter(), heartbeat: time.Now(), shapesChecked: time.Now()}
	return l.run(ctx, sum)
}

func (l *streamLoop) caughtUp() bool {
	return l.target != "" && l.e.job.Changes.Compare(l.e.state.Confirmed, l.target) >= 0
}

// confirm moves the confirmed position to pos (never back), saves the
// state at most once a second unless forced, and tells the stream.
func (l *streamLoop) confirm(pos source.Position, force bool) error {
	e := l.e
	if e.job.Changes.Compare(pos, e.state.Confirmed) > 0 {
		e.state.Confirmed = pos
		e.live.confirmed.Store(&pos)
	}
	if force || time.Since(l.lastSave) >= time.Second {
		if err := e.save(); err != nil {
			return err
		}
		l.lastSave = time.Now()
	}
	l.st.Confirm(e.state.Confirmed)
	return nil
}

// run reads the stream round by round until sync is caught up, stopped or
// fails. Each round is a batch of the stream's events, applied, then
// confirmed by settle.
func (l *streamLoop) run(ctx context.Context, sum *Summary) error {
	e := l.e
	stopping := false
	for {
		e.health.Beat()
		if l.caughtUp() {
			// DDL that no row change followed is in no message of a
			// silent-DDL log: the catalog is compared before sync says
			// it is caught up.
			if err := e.checkShapes(ctx, true); err != nil {
				return err
			}
			sum.CaughtUp = true
			e.report(l)
			return l.settle(batch{}, true)
		}
		if stopping {
			e.report(l)
			if err := l.settle(batch{}, true); err != nil {
				return err
			}
			return pipeline.ErrInterrupted
		}
		select {
		case <-e.opts.Stop:
			e.stopping()
			stopping = true
		case <-ctx.Done():
			return ctx.Err()
		case <-e.beat.C:
			l.tick(ctx)
			e.report(l)
			if time.Since(l.shapesChecked) >= shapeCheckEvery {
				l.shapesChecked = time.Now()
				if err := e.checkShapes(ctx, true); err != nil {
					return err
				}
			}
		case ev, ok := <-l.events:
			if !ok {
				return l.ended(ctx)
			}
			e.metrics.Event(time.Now())
			if err := l.round(ctx, l.gather(ev)); err != nil {
				return err
			}
		}
	}
}

// batch is what one round gathered from the stream.
type batch struct {
	// txns are whole transactions (or a piece of a large one), in order.
	txns []*source.Txn
	// idle is the position the source said it is idle up to, after txns.
	idle source.Position
	// schema is DDL after txns: sync applies them, confirms and stops.
	schema *source.SchemaChange
}

// gather starts a batch with ev and adds whole transactions while more
// wait in the stream, until the batch holds a round's worth of changes,
// the stream holds nothing more, DDL arrives or the stream closes. A
// position the source said it is idle up to ends nothing while
// transactions wait behind it: they come after it, and confirming them
// confirms it. PostgreSQL sends a keepalive between commits that trickle
// in one at a time (under synchronous_commit = on, each as its WAL is
// flushed); rounds that ended at each held a handful of changes, and sync
// fell ever further behind a steady stream of commits (figures:
// docs/performance.md, live sync).
func (l *streamLoop) gather(ev source.Event) batch {
	e := l.e
	var b batch
	n := 0
	for {
		switch {
		case ev.Schema != nil:
			b.schema = ev.Schema
			return b
		case ev.Txn != nil:
			b.txns = append(b.txns, ev.Txn)
			b.idle = "" // the transaction comes after it
			e.live.pending(ev.Txn.Commit)
			n += len(ev.Txn.Changes)
		default:
			b.idle = ev.Idle
		}
		if n >= e.opts.RoundChanges {
			return b
		}
		var ok bool
		select {
		case ev, ok = <-l.events:
			if !ok {
				return b
			}
		default:
			return b
		}
	}
}

// round applies a batch and confirms what it made safe. DDL stops sync
// once what came before it is applied and confirmed.
func (l *streamLoop) round(ctx context.Context, b batch) error {
	if err := l.applyRound(ctx, b.txns); err != nil {
		return err
	}
	if b.schema != nil {
		// What came before the change is confirmed; nothing after it is
		// until it is judged and acted on.
		if err := l.settle(b, true); err != nil {
			return err
		}
		return l.e.schemaChanged(ctx, []schemaEvent{{ref: b.schema.Table, ddl: b.schema.DDL, streaming: true}})
	}
	if len(b.txns) > 0 && len(l.events) > 0 {
		// A backlog waits in the stream: its oldest transaction
		// committed no earlier than the last one applied.
		l.e.live.pending(b.txns[len(b.txns)-1].Commit)
	}
	return l.settle(b, false)
}

// settle is where sync decides what it confirms, after each round and
// before it returns:
//   - the end of the round's last whole transaction; a round that is only
//     a piece of a large transaction (source.Txn.Partial) confirms nothing
//     until its last piece is applied;
//   - then the position the source said it is idle up to: everything
//     received is applied, so that position is confirmed too (and WAL
//     does not pile up behind an idle slot);
//   - when sync is about to return (final: DDL, a stop, caught up), the
//     state is saved at once; otherwise at most once a second.
func (l *streamLoop) settle(b batch, final bool) error {
	e := l.e
	if through := lastEnd(b.txns); through != "" {
		if err := l.confirm(through, false); err != nil {
			return err
		}
	}
	if b.idle != "" {
		e.live.caughtUp(time.Now())
		if err := l.confirm(b.idle, false); err != nil {
			return err
		}
	}
	if final {
		return l.confirm(e.state.Confirmed, true)
	}
	return nil
}

// ended is the change stream closing on its own: a lost connection, or
// a slot or binlog that cannot be read any more, which is a reset.
func (l *streamLoop) ended(ctx context.Context) error {
	err := fmt.Errorf("change stream: %w", l.st.Err())
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if lost, lerr := l.e.job.Changes.Lost(lctx, l.e.state.Confirmed); lerr == nil && lost != "" {
		return &SourceResetError{What: lost, Command: l.e.resetCommand()}
	}
	if l.e.side(err) != notTransient {
		return err
	}
	return &pipeline.ResumableError{Err: err}
}

// applyRound applies queued transactions; settle confirms them. After a
// stop signal the round's writes get the grace period.
func (l *streamLoop) applyRound(ctx context.Context, txns []*source.Txn) error {
	e := l.e
	if len(txns) == 0 {
		return nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-e.opts.Stop:
			select {
			case <-time.After(e.opts.Grace):
				e.abandoned.Store(true)
				cancel()
			case <-done:
			}
		case <-done:
		}
	}()
	// DynamoDB going away is waited out here, the stream kept open: the
	// round is applied again from the start (whatever it half wrote is
	// re-derived), and nothing is confirmed meanwhile.
	if rowChanges(txns) > 0 {
		end := txns[len(txns)-1].End // "" for a piece of a large transaction
		e.live.writing(end)
	}
	var r *round
	for {
		r = &round{e: e, txns: txns}
		err := r.apply(wctx)
		if err == nil {
			break
		}
		if errors.Is(err, context.Canceled) && ctx.Err() == nil {
			return pipeline.ErrInterrupted
		}
		if e.side(err) != targetFault {
			return e.explainGone(ctx, err)
		}
		if err := e.waitOut(ctx, targetFault, err); err != nil {
			return err
		}
		e.writer.Rearm()
	}
	r.counts.Rounds = 1
	if len(r.truncated) > 0 {
		evs := make([]schemaEvent, len(r.truncated))
		for i, ref := range r.truncated {
			evs[i] = schemaEvent{ref: ref, truncated: true}
		}
		if err := e.schemaChanged(ctx, evs); err != nil {
			return err
		}
	}
	through := lastEnd(txns)
	e.log.Debug("round applied", "transactions", r.counts.Transactions, "changes", r.counts.Changes, "rows", r.counts.RowsDerived,
		"written", r.counts.ItemsWritten, "deleted", r.counts.ItemsDeleted, "through", through, "piece", txns[len(txns)-1].Partial,
		"readers", r.readers, "read_ms", r.readTime.Milliseconds(), "write_ms", r.writeTime.Milliseconds())
	e.run.add(r.counts)
	e.state.Totals.add(r.counts)
	e.metrics.Applied(r.counts.Transactions, r.counts.Changes, r.counts.ItemsWritten, r.counts.ItemsDeleted)
	e.live.applied()
	e.recovered(metrics.StateStreaming)
	return nil
}

// lastEnd is the end of the last whole transaction of txns: a piece of a
// large transaction (source.Txn.Partial) has none, and confirming past the
// transactions before it must not reach into it.
// rowChanges counts the row changes of txns.
func rowChanges(txns []*source.Txn) int {
	n := 0
	for _, t := range txns {
		n += len(t.Changes)
	}
	return n
}

func lastEnd(txns []*source.Txn) source.Position {
	for i := len(txns) - 1; i >= 0; i-- {
		if txns[i].End != "" {
			return txns[i].End
		}
	}
	return ""
}

// tick runs once a second while streaming: the heartbeat, when one is
// due, and the check of the log the server retains.
func (l *streamLoop) tick(ctx context.Context) {
	e := l.e
	now := time.Now()
	if hb, ok := e.job.Changes.(source.Heartbeater); ok && now.Sub(l.heartbeat) >= e.opts.HeartbeatEvery {
		l.heartbeat = now
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := hb.Heartbeat(hctx); err != nil {
			e.log.Warn("the heartbeat failed; sync goes on", "error", err)
		}
		cancel()
	}
	if r, ok := e.job.Changes.(source.Retainer); ok && now.Sub(l.retention) >= retentionEvery {
		l.retention = now
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		kept, limit, err := r.Retained(rctx)
		cancel()
		if err != nil {
			e.log.Debug("reading the retained WAL failed", "error", err)
			return
		}
		e.metrics.RetainedWAL(kept)
		e.checkRetained(kept, limit)
	}
}

// retentionEvery is how often the log the server retains is read.
const retentionEvery = 30 * time.Second

// checkRetained warns, once per crossing, when the server keeps more log
// for sync than --warn-retained-wal or half of what it may keep before
// invalidating the slot.
func (e *engine) checkRetained(kept, limit int64) {
	over := kept > e.opts.WarnRetainedWAL || (limit > 0 && kept > limit/2)
	switch {
	case over && !e.warned:
		e.warned = true
		e.log.Warn("the replication slot retains much WAL on the server: sync is behind or the slot does not advance; past max_slot_wal_keep_size the server invalidates it",
			"retained_bytes", kept, "warn_at_bytes", e.opts.WarnRetainedWAL, "max_slot_wal_keep_size_bytes", limit)
	case !over && e.warned:
		e.warned = false
		e.log.Info("the WAL the replication slot retains is back under the warning threshold", "retained_bytes", kept)
	}
}

// stopping is the first stop signal: readiness fails first, then the
// round in flight finishes within the grace and sync confirms and exits.
func (e *engine) stopping() {
	e.health.SetReady(false, "stopping")
	e.setState(metrics.StateStopping)
	e.log.Info("stopping: the round in flight finishes within the grace, then sync confirms and exits", "grace", e.opts.Grace)
}

// report sends the live status.
func (e *engine) report(l *streamLoop) {
	if e.opts.Status == nil {
		return
	}
	s := Status{Time: time.Now().UTC(), Phase: phaseStream, State: e.stateName.Load().(string), Fault: e.status.get(),
		Confirmed: e.state.Confirmed, Run: e.run, LagSeconds: e.live.LagSeconds(), LagBytes: e.live.BehindBytes()}
	if l != nil {
		s.CaughtUp = l.caughtUp()
		s.ChangesPerSec = l.rate.perSecond(e.run.Changes)
	}
	if e.run.Changes > 0 {
		s.FanOut = float64(e.run.ItemsWritten+e.run.ItemsDeleted) / float64(e.run.Changes)
	}
	e.opts.Status(s)
}

// setState records the state for the series and the status line.
func (e *engine) setState(s string) {
	e.stateName.Store(s)
	e.metrics.SetState(s)
}

// rateMeter turns a counter into a per-second rate over the last few
// seconds.
type rateMeter struct {
	at    []time.Time
	count []int64
}

func newRateMeter() *rateMeter { return &rateMeter{} }

func (m *rateMeter) perSecond(n int64) float64 {
	now := time.Now()
	m.at = append(m.at, now)
	m.count = append(m.count, n)
	for len(m.at) > 2 && now.Sub(m.at[0]) > 5*time.Second {
		m.at, m.count = m.at[1:], m.count[1:]
	}
	d := now.Sub(m.at[0]).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(n-m.count[0]) / d
}
