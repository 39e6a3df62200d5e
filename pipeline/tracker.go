package pipeline

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/value"
)

// tracker follows the rows of one shard from read to acknowledgement and
// moves the shard's checkpoint position. Writers acknowledge items out of
// order, so the position only moves past a row once that row and every
// row read before it in the shard have all their items acknowledged.
type tracker struct {
	mu       sync.Mutex
	shard    *checkpoint.Shard
	store    checkpoint.Store
	inFlight *semaphore.Weighted
	queue    []*ticket // rows in read order not yet passed by the position
	head     int
	readDone bool
	// done is closed when the shard is read and every row is settled.
	done chan struct{}
	// onDone, if set, is called once then (for the log).
	onDone func()
	// slab is where the next tickets are allocated, 64 at a time (one
	// allocation instead of one per row; called by the one reader).
	slab []ticket
}

func newTracker(s *checkpoint.Shard, store checkpoint.Store, inFlight *semaphore.Weighted) *tracker {
	return &tracker{shard: s, store: store, inFlight: inFlight, done: make(chan struct{})}
}

// ticket is one source row in flight. pending counts its unacknowledged
// items plus one hold that the builder releases once every item has been
// handed on, so that a row whose first item is acknowledged before the
// last is built does not complete early.
type ticket struct {
	tr      *tracker
	ent     *entityRun
	row     value.Row
	nested  [][]value.Row // child rows of nested tables, if any
	split   *rowSplit     // the row's split aggregates, if any (set before its items go out)
	key     []value.Value
	pending atomic.Int32
	items   int32
	weight  atomic.Int64 // held on the in-flight budget until the row completes
	// rejected marks a row that went to the error policy.
	rejected atomic.Bool
	complete bool // guarded by tr.mu
	// passed is set once the shard's position has moved past the row.
	passed atomic.Bool
}

// Checkpointed implements sink.Checkpointed: the store's position is past
// the row, so a resumed run will not read it again.
func (tk *ticket) Checkpointed() bool { return tk.passed.Load() }

// add registers a row just read; called by the shard's reader in key order.
func (t *tracker) add(ent *entityRun, row value.Row, nested [][]value.Row, nkey int, weight int64) *ticket {
	if len(t.slab) == 0 {
		t.slab = make([]ticket, 64)
	}
	tk := &t.slab[0]
	t.slab = t.slab[1:]
	tk.tr, tk.ent, tk.row, tk.nested, tk.key = t, ent, row, nested, row[:nkey:nkey]
	tk.weight.Store(weight)
	tk.pending.Store(1)
	t.mu.Lock()
	t.queue = append(t.queue, tk)
	t.mu.Unlock()
	return tk
}

// finishRead records that the reader has added every row of the shard;
// once they are all settled the shard is marked done. A shard whose read
// was interrupted is never marked done: it resumes after its position.
func (t *tracker) finishRead() {
	t.mu.Lock()
	t.readDone = true
	t.advanceLocked()
	t.mu.Unlock()
}

// release drops one pending count: an acknowledged item or the builder's
// hold.
func (tk *ticket) release() {
	if tk.pending.Add(-1) == 0 {
		t := tk.tr
		tk.releaseWeight()
		t.mu.Lock()
		tk.complete = true
		t.advanceLocked()
		t.mu.Unlock()
	}
}

// releaseWeight gives the row's share of the in-flight budget back, once:
// when the row completes, or earlier when one of its items is held for
// duplicate settling, so that held rows never starve the readers that the
// settling waits for.
func (tk *ticket) releaseWeight() {
	if w := tk.weight.Swap(0); w > 0 && tk.tr.inFlight != nil {
		tk.tr.inFlight.Release(w)
	}
}

// advanceLocked pops completed rows off the front of the queue and records
// the new position.
func (t *tracker) advanceLocked() {
	var last *ticket
	var rows, items, rejected int64
	from := t.head
	for t.head < len(t.queue) && t.queue[t.head].complete {
		tk := t.queue[t.head]
		t.head++
		last = tk
		rows++
		items += int64(tk.items)
		if tk.rejected.Load() {
			rejected++
		}
	}
	if last != nil {
		t.store.Advance(t.shard, last.key, rows, items, rejected)
	}
	// Marked only after Advance: a row reported as checkpointed is always
	// within the position a concurrent Flush of the store saves.
	for i := from; i < t.head; i++ {
		t.queue[i].passed.Store(true)
		t.queue[i] = nil
	}
	// Keep the queue from growing without bound: drop the consumed prefix
	// once it is the larger half.
	if t.head > 1024 && t.head*2 > len(t.queue) {
		t.queue = append(t.queue[:0:0], t.queue[t.head:]...)
		t.head = 0
	}
	if t.readDone && t.head == len(t.queue) {
		select {
		case <-t.done:
		default:
			t.store.Done(t.shard)
			close(t.done)
			if t.onDone != nil {
				t.onDone()
			}
		}
	}
}
