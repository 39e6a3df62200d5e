package cdc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/source"
)

// Status is the live state of a streaming sync.
type Status struct {
	Time  time.Time `json:"time"`
	Phase string    `json:"phase"`
	// LagSeconds is how far behind the source's commits the table is:
	// while transactions wait to be applied, the time since the commit of
	// the last one applied; 0 when none waits.
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

// stream applies the change log from the confirmed position until stopped,
// failed, or (with a target) caught up.
func (e *engine) stream(ctx context.Context, target source.Position, sum *Summary) error {
	st, err := e.job.Changes.Stream(ctx, e.state.Confirmed, e.graph.needs)
	if err != nil {
		return err
	}
	defer st.Close()
	events := st.Events()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var (
		lastSave time.Time
		queued   []*source.Txn
		rate     = newRateMeter()
		// applied is the commit time of the last transaction applied.
		applied = time.Now()
	)
	caughtUp := func() bool {
		return target != "" && e.job.Changes.Compare(e.state.Confirmed, target) >= 0
	}
	report := func() {
		if e.opts.Status == nil {
			return
		}
		s := Status{Time: time.Now().UTC(), Phase: phaseStream, Confirmed: e.state.Confirmed, Run: e.run, CaughtUp: caughtUp()}
		if len(events) > 0 {
			s.LagSeconds = max(time.Since(applied).Seconds(), 0)
		}
		s.LagBytes = e.job.Changes.Distance(e.state.Confirmed, st.ServerEnd())
		s.ChangesPerSec = rate.perSecond(e.run.Changes)
		if e.run.Changes > 0 {
			s.FanOut = float64(e.run.ItemsWritten+e.run.ItemsDeleted) / float64(e.run.Changes)
		}
		e.opts.Status(s)
	}
	confirm := func(pos source.Position, force bool) error {
		if e.job.Changes.Compare(pos, e.state.Confirmed) > 0 {
			e.state.Confirmed = pos
		}
		if force || time.Since(lastSave) >= time.Second {
			if err := e.save(); err != nil {
				return err
			}
			lastSave = time.Now()
		}
		st.Confirm(e.state.Confirmed)
		return nil
	}
	stopping := false
	for {
		if caughtUp() {
			sum.CaughtUp = true
			report()
			return confirm(e.state.Confirmed, true)
		}
		if stopping {
			report()
			if err := confirm(e.state.Confirmed, true); err != nil {
				return err
			}
			return pipeline.ErrInterrupted
		}
		// Gather whole transactions until the round is full or nothing
		// more is waiting.
		var idle source.Position
		select {
		case <-e.opts.Stop:
			stopping = true
			continue
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			report()
			continue
		case ev, ok := <-events:
			if !ok {
				return &ResumableError{Err: fmt.Errorf("change stream: %w", st.Err())}
			}
			switch {
			case ev.Schema != nil:
				if err := confirm(e.state.Confirmed, true); err != nil {
					return err
				}
				return &SchemaError{Change: *ev.Schema}
			case ev.Txn != nil:
				queued = append(queued, ev.Txn)
			default:
				idle = ev.Idle
			}
		}
		n := 0
		for _, t := range queued {
			n += len(t.Changes)
		}
	gather:
		for idle == "" && n < e.opts.RoundChanges {
			select {
			case ev, ok := <-events:
				if !ok {
					break gather
				}
				switch {
				case ev.Schema != nil:
					// Apply what came before the DDL first.
					if err := e.applyRound(ctx, queued, st, confirm); err != nil {
						return err
					}
					if err := confirm(e.state.Confirmed, true); err != nil {
						return err
					}
					return &SchemaError{Change: *ev.Schema}
				case ev.Txn != nil:
					queued = append(queued, ev.Txn)
					n += len(ev.Txn.Changes)
				default:
					idle = ev.Idle
				}
			default:
				break gather
			}
		}
		if len(queued) > 0 {
			if err := e.applyRound(ctx, queued, st, confirm); err != nil {
				return err
			}
			applied = queued[len(queued)-1].Commit
			queued = queued[:0]
		}
		if idle != "" {
			// Everything received is applied: the source is idle up to
			// idle, so that position is confirmed too (and WAL does not
			// pile up behind an idle slot).
			if err := confirm(idle, false); err != nil {
				return err
			}
		}
	}
}

// applyRound applies queued transactions and confirms the last one's end.
// After a stop signal the round's writes get the grace period.
func (e *engine) applyRound(ctx context.Context, txns []*source.Txn, st Stream, confirm func(source.Position, bool) error) error {
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
	r := &round{e: e, txns: txns}
	err := r.apply(wctx)
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() == nil {
			return pipeline.ErrInterrupted
		}
		return err
	}
	r.counts.Rounds = 1
	e.log.Debug("round applied", "transactions", len(txns), "changes", r.counts.Changes, "rows", r.counts.RowsDerived,
		"written", r.counts.ItemsWritten, "deleted", r.counts.ItemsDeleted, "through", txns[len(txns)-1].End,
		"read_ms", r.readTime.Milliseconds(), "write_ms", r.writeTime.Milliseconds())
	e.run.add(r.counts)
	e.state.Totals.add(r.counts)
	return confirm(txns[len(txns)-1].End, false)
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
