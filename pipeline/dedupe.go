package pipeline

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// dedupe detects two rows of a run producing the same item key, which
// would otherwise overwrite one item with another in silence.
//
// Every key goes through a Bloom filter sized from the run's estimate (see
// keySet). A key the filter has
// probably seen is held back, not written. Held keys are settled exactly by
// reading the source again and listing every row that produces them: two
// producers are a collision, reported through the error policy with both
// rows named; one producer was a false alarm and the item is written. With
// the fail policy the first held key is settled at once, so a colliding
// mapping stops the run immediately; otherwise all held keys are settled in
// one pass after the last row is built.
type dedupe struct {
	set *keySet
	run *run

	mu         sync.Mutex
	held       map[string][]*mapping.Item
	heldCount  int
	collisions atomic.Int64
}

// maxHeld bounds the items held for settling; past it they are settled
// early, in one pass.
const maxHeld = 10000

func newDedupe(set *keySet, r *run) *dedupe {
	return &dedupe{set: set, run: r, held: map[string][]*mapping.Item{}}
}

// filter returns the items of a chunk that may be sent now, holding back
// those whose key the filter may have seen. When it settles held keys
// early, the false alarms among them are sent to out.
func (d *dedupe) filter(ctx context.Context, items []mapping.Item, out chan<- []*mapping.Item) ([]*mapping.Item, error) {
	keys := make([]string, len(items))
	for i := range items {
		keys[i] = items[i].Key
	}
	seen := make([]bool, len(items))
	d.set.testAndAddAll(keys, seen)
	ready := make([]*mapping.Item, 0, len(items))
	for i := range items {
		if !seen[i] {
			ready = append(ready, &items[i])
			continue
		}
		if err := d.hold(ctx, &items[i], out); err != nil {
			return ready, err
		}
	}
	return ready, nil
}

// hold keeps an item whose key may be a duplicate until it is settled.
func (d *dedupe) hold(ctx context.Context, it *mapping.Item, out chan<- []*mapping.Item) error {
	it.Origin.(*ticket).releaseWeight()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.held[it.Key] = append(d.held[it.Key], it)
	d.heldCount++
	if it.Entity.OnError == mapping.PolicyFail || d.heldCount >= maxHeld {
		return d.settleLocked(ctx, out)
	}
	return nil
}

// settle resolves every held key and sends the false alarms on to out.
func (d *dedupe) settle(ctx context.Context, out chan<- []*mapping.Item) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.settleLocked(ctx, out)
}

// producer is one row that produces a key.
type producer struct {
	entity string
	key    string // the row's source key, rendered
	part   int
}

func (d *dedupe) settleLocked(ctx context.Context, out chan<- []*mapping.Item) error {
	if len(d.held) == 0 {
		return nil
	}
	d.run.opts.Logger.Info("re-reading the source to settle possible duplicate keys", "keys", len(d.held), "items", d.heldCount)
	producers, err := d.scan(ctx)
	if err != nil {
		return fmt.Errorf("checking possible duplicate keys: %w", err)
	}
	held := d.held
	d.held, d.heldCount = map[string][]*mapping.Item{}, 0
	for key, items := range held {
		for _, it := range items {
			tk := it.Origin.(*ticket)
			self := producer{entity: tk.ent.plan.Name, key: mapping.KeyStringOf(tk.ent.plan.SourceKey(tk.row)), part: it.Part}
			var other *producer
			for i := range producers[key] {
				if producers[key][i] != self {
					other = &producers[key][i]
					break
				}
			}
			if other == nil {
				if err := d.forward(ctx, it, out); err != nil {
					return err
				}
				continue
			}
			d.collisions.Add(1)
			rerr := &mapping.RowError{
				Entity:    self.entity,
				SourceKey: tk.ent.plan.SourceKey(tk.row),
				Reason: fmt.Sprintf("key collision: item key %s is also produced by entity %s, row %s; one item would silently overwrite the other",
					it.KeyText(), other.entity, other.key),
				Row: tk.ent.plan.RowValues(tk.row),
			}
			if err := d.run.reject(tk, rerr); err != nil {
				return err
			}
			tk.release()
		}
	}
	return nil
}

// forward sends a false alarm on to be written.
func (d *dedupe) forward(ctx context.Context, it *mapping.Item, out chan<- []*mapping.Item) error {
	select {
	case out <- []*mapping.Item{it}:
		return nil
	case <-ctx.Done():
		return nil
	}
}

// scan reads every entity again and lists the producers of held keys.
func (d *dedupe) scan(ctx context.Context) (map[string][]producer, error) {
	out := map[string][]producer{}
	var buf []mapping.Item
	for _, er := range d.run.order {
		ep := er.plan
		err := ReadEntity(ctx, d.run.job.Snapshot, ep, source.Full, nil, d.run.opts.PageSize, func(row value.Row, nested [][]value.Row) error {
			var err error
			buf, err = ep.BuildNested(row, nested, buf[:0], nil)
			if err != nil {
				return nil // a bad row produces no item; the policy already saw it
			}
			for i := range buf {
				if _, ok := d.held[buf[i].Key]; ok {
					out[buf[i].Key] = append(out[buf[i].Key], producer{entity: ep.Name, key: mapping.KeyStringOf(ep.SourceKey(row)), part: buf[i].Part})
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
