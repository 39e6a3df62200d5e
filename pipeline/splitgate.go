package pipeline

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
)

// A reader must never see the head of a split aggregate (the item that
// keeps the key and says how many parts there are) without all of its
// parts (sink/heads.go states the rule and where else it is kept).
// mapping builds a split row's items parts first and head last;
// splitGates keeps that order whatever the writers do: the batcher holds
// each head back until every one of its parts is acknowledged, so with
// any number of writers, retries, partial batches and a sink that
// acknowledges late the head is written only after its parts. Unlike
// sink.Writers.WriteSet, which waits for a whole set before its heads, a
// head here waits only for its own parts: the stream does not stop.
//
// A row that fails (an item refused, a key collision) before its head is
// written never gets its head written, and the parts already written are
// deleted, the head's key first: an earlier run may have left a head whose
// parts this run has begun to overwrite. The row is counted complete only
// once the deletes are done, so an interruption before then leaves the
// checkpoint before the row and the next run repeats it.
type splitGates struct {
	mu sync.Mutex
	// ready holds heads whose parts are all acknowledged, for the batcher;
	// wake tells the batcher that ready or parked changed.
	ready  []*mapping.Item
	parked int
	wake   chan struct{}
	// jobs are deletes for failed rows; jobWake tells the remover.
	jobs    []removal
	jobWake chan struct{}

	removed, left atomic.Int64
}

func newSplitGates() *splitGates {
	return &splitGates{wake: make(chan struct{}, 1), jobWake: make(chan struct{}, 1)}
}

// rowSplit is the state of one row's split aggregates; guarded by
// splitGates.mu.
type rowSplit struct {
	failed bool
	aggs   []*aggregate
	of     []*aggregate // by item Part: the aggregate the item belongs to, or nil
}

type aggregate struct {
	head     *mapping.Item
	unacked  int  // parts not yet acknowledged
	parked   bool // the head is held in the batcher
	sent     bool // the head is on its way to the sink: its outcome decides
	headDone bool // the head is acknowledged: the aggregate is complete
	written  []*mapping.Item
}

// removal deletes the parts a failed row wrote, after the head's key.
type removal struct {
	tk    *ticket
	head  *mapping.Item
	parts []*mapping.Item
}

// splitRange is a built row with a split aggregate: its items are
// slab[start:end].
type splitRange struct {
	tk         *ticket
	start, end int
}

// newRowSplit links a row's items to their aggregates, or returns nil when
// the row has no split aggregate. items are the row's items in build order,
// at their final addresses.
func newRowSplit(items []mapping.Item) *rowSplit {
	var rs *rowSplit
	sink.SplitAggregates(items, func(head, first int) {
		if rs == nil {
			rs = &rowSplit{of: make([]*aggregate, len(items))}
		}
		a := &aggregate{head: &items[head], unacked: head - first}
		rs.aggs = append(rs.aggs, a)
		for j := first; j <= head; j++ {
			rs.of[j] = a
		}
	})
	return rs
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// admit is called by the batcher for every item it receives and says
// whether to send it now. A head whose parts are not all acknowledged is
// parked (take returns it later); the head of a failed row is dropped.
func (g *splitGates) admit(it *mapping.Item) bool {
	tk, _ := it.Origin.(*ticket)
	if g == nil || tk == nil {
		return true
	}
	if tk.split == nil || !sink.IsHead(it) {
		return true
	}
	g.mu.Lock()
	a := tk.split.of[it.Part]
	switch {
	case tk.split.failed:
		g.mu.Unlock()
		tk.release() // never written
		return false
	case a.unacked == 0:
		a.sent = true
		g.mu.Unlock()
		return true
	}
	a.parked = true
	g.parked++
	g.mu.Unlock()
	return false
}

// take returns the heads released since the last call.
func (g *splitGates) take() []*mapping.Item {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.ready
	g.ready = nil
	return out
}

// idle reports whether no head is parked or waiting to be taken.
func (g *splitGates) idle() bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.parked == 0 && len(g.ready) == 0
}

// wakeC is the batcher's signal; nil (never ready) without gates.
func (g *splitGates) wakeC() <-chan struct{} {
	if g == nil {
		return nil
	}
	return g.wake
}

// acked is called for an acknowledged item before its row's pending count
// is released.
func (g *splitGates) acked(it *mapping.Item) {
	tk, _ := it.Origin.(*ticket)
	if g == nil || tk == nil {
		return
	}
	if tk.split == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	a := tk.split.of[it.Part]
	if a == nil {
		return
	}
	if sink.IsHead(it) {
		a.headDone = true
		return
	}
	a.unacked--
	if tk.split.failed {
		g.removeLocked(tk, a, []*mapping.Item{it})
		return
	}
	a.written = append(a.written, it)
	if a.unacked == 0 && a.parked {
		a.parked = false
		a.sent = true
		g.parked--
		g.ready = append(g.ready, a.head)
		notify(g.wake)
	}
}

// fail is called when a row goes to the error policy after it was built:
// its parked heads are dropped and its written parts deleted. Aggregates
// whose head is already written are complete and stay.
func (g *splitGates) fail(tk *ticket) {
	if g == nil || tk.split == nil {
		return
	}
	dropped := 0
	g.mu.Lock()
	if tk.split.failed {
		g.mu.Unlock()
		return
	}
	tk.split.failed = true
	for _, a := range tk.split.aggs {
		if a.headDone || a.sent {
			// Written, or its parts all are and the head's own outcome
			// decides: acknowledged, the aggregate is complete; refused,
			// refused removes the parts.
			continue
		}
		if a.parked {
			a.parked = false
			g.parked--
			dropped++
		}
		if len(a.written) > 0 {
			g.removeLocked(tk, a, a.written)
			a.written = nil
		}
	}
	g.mu.Unlock()
	if dropped > 0 {
		notify(g.wake)
	}
	// The caller still holds the failing item's count, so the row cannot
	// complete here.
	for range dropped {
		tk.release()
	}
}

// refused is called when the sink refuses an item, before the row goes to
// the error policy: a refused head leaves its written parts to delete.
func (g *splitGates) refused(it *mapping.Item) {
	tk, _ := it.Origin.(*ticket)
	if g == nil || tk == nil {
		return
	}
	if tk.split == nil || !sink.IsHead(it) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	a := tk.split.of[it.Part]
	a.sent = false
	if tk.split.failed && len(a.written) > 0 {
		g.removeLocked(tk, a, a.written)
		a.written = nil
	}
}

func (g *splitGates) removeLocked(tk *ticket, a *aggregate, parts []*mapping.Item) {
	tk.pending.Add(1) // released once the delete is done
	g.jobs = append(g.jobs, removal{tk: tk, head: a.head, parts: parts})
	notify(g.jobWake)
}

func (g *splitGates) takeJobs() []removal {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.jobs
	g.jobs = nil
	return out
}

// remover deletes the parts of failed rows until the writers are done and
// no delete is left.
func (r *run) remover(ctx context.Context, writersDone <-chan struct{}) error {
	g := r.gates
	for {
		jobs := g.takeJobs()
		for _, j := range jobs {
			if err := r.removeParts(ctx, j); err != nil {
				return err
			}
		}
		if len(jobs) > 0 {
			continue
		}
		select {
		case <-g.jobWake:
		case <-writersDone:
			g.mu.Lock()
			n := len(g.jobs)
			g.mu.Unlock()
			if n == 0 {
				return nil
			}
		case <-ctx.Done():
			return nil // interrupted: the rows are not complete and are redone
		}
	}
}

func (r *run) removeParts(ctx context.Context, j removal) error {
	ep := j.tk.ent.plan
	rm, ok := r.job.Sink.(sink.Remover)
	if !ok {
		r.gates.left.Add(int64(len(j.parts)))
		r.opts.Logger.Warn("parts of a failed split aggregate left in the target: this sink cannot delete", "entity", ep.Name, "row", mapping.KeyStringOf(ep.SourceKey(j.tk.row)), "parts", len(j.parts))
		j.tk.release()
		return nil
	}
	// The head first: from then on no reader sees an aggregate of this row.
	if err := rm.Remove(ctx, []*mapping.Item{j.head}); err == nil {
		err = rm.Remove(ctx, j.parts)
		if err != nil {
			return fmt.Errorf("deleting %d parts written for failed row %s of entity %s: %w", len(j.parts), mapping.KeyStringOf(ep.SourceKey(j.tk.row)), ep.Name, err)
		}
	} else {
		return fmt.Errorf("deleting the split item of failed row %s of entity %s: %w", mapping.KeyStringOf(ep.SourceKey(j.tk.row)), ep.Name, err)
	}
	r.gates.removed.Add(int64(len(j.parts)))
	j.tk.release()
	return nil
}
