package cdc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/statestore"
)

// write records the intent in the row index, writes puts and deletes, and
// then records the new keys.
func (r *round) write(ctx context.Context, rows []*derived) error {
	store := r.e.store
	puts, err := r.claim(rows)
	if err != nil {
		return err
	}
	dels := r.stale(rows)
	// Intent: every key a row had or is about to have. Most rows put
	// again the keys they had: they have no intent to record, and nothing
	// is allocated for them.
	var intents []statestore.Entry
	for _, d := range rows {
		var union []string
		for i := range d.items {
			if k := d.items[i].Key; !slices.Contains(d.old, k) && !slices.Contains(union, k) {
				if union == nil {
					union = slices.Clone(d.old)
				}
				union = append(union, k)
			}
		}
		if union != nil {
			intents = append(intents, statestore.Entry{Entity: d.entity.Name, Row: d.key, Keys: union})
		}
	}
	if err := store.SetKeys(ctx, intents); err != nil {
		return fmt.Errorf("recording write intents in the row index: %w", err)
	}
	ops := make([]*mapping.Item, 0, len(puts)+len(dels))
	ops = append(ops, puts...)
	for k := range dels {
		ops = append(ops, r.e.plan.Table.DeleteItem(k))
	}
	sent := time.Now()
	if err := r.e.send(ctx, ops); err != nil {
		return err
	}
	r.writeTime += time.Since(sent)
	r.counts.ItemsWritten += int64(len(puts))
	r.counts.ItemsDeleted += int64(len(dels))
	var written []statestore.Entry
	for _, d := range rows {
		if !d.keysChanged() {
			continue
		}
		keys := make([]string, len(d.items))
		for i := range d.items {
			keys[i] = d.items[i].Key
		}
		written = append(written, statestore.Entry{Entity: d.entity.Name, Row: d.key, Keys: keys})
	}
	if err := store.SetKeys(ctx, written); err != nil {
		return fmt.Errorf("recording written keys in the row index: %w", err)
	}
	return nil
}

// send writes ops (distinct keys) with the writers in parallel and returns
// once every one is acknowledged. The head item of a split aggregate is
// written only after every other write of the round, its parts included,
// is acknowledged: a reader that finds the head finds all its parts
// (sink.Writers.WriteSet). The writer owns each request body it encodes
// (sink.Body), and the items' encodings sit in arena blocks that are never
// reused (mapping.Arena): a retried request sends what was built.
func (e *engine) send(ctx context.Context, ops []*mapping.Item) error {
	res := &results{}
	if err := e.writers.WriteSet(ctx, ops, res); err != nil {
		if errors.Is(err, sink.ErrGaveUp) {
			return &pipeline.ResumableError{Err: err}
		}
		return err
	}
	return res.err()
}

// results receives the writer's outcomes for a round.
type results struct {
	mu     sync.Mutex
	refuse error
}

func (r *results) Acked([]*mapping.Item) {}

func (r *results) Rejected(it *mapping.Item, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse == nil {
		r.refuse = fmt.Errorf("DynamoDB refused item %s: %w", it.KeyText(), err)
	}
}

func (r *results) Retried([]*mapping.Item, bool) {}

func (r *results) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refuse
}
