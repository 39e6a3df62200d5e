package incremental

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
)

// MaxTracked bounds the collections a Tracker remembers. A run that
// writes more than this many collections has changed so much of the table
// that scanning its keys costs little more than querying them, so the key
// sweep then scans (and memory stays bounded).
const MaxTracked = 1 << 18

// Tracker wraps a sink and remembers the partition keys of the items
// written through it, so that the key sweep queries those collections
// whatever their digests say: the rows that made them may have changed
// between the item pass's read and the sweep's (MySQL reads each shard in
// its own snapshot).
type Tracker struct {
	sink.Sink
	table *mapping.TableSchema

	mu       sync.Mutex
	pks      map[string]types.AttributeValue
	overflow bool
}

// NewTracker wraps inner, which writes to table.
func NewTracker(inner sink.Sink, table *mapping.TableSchema) *Tracker {
	return &Tracker{Sink: inner, table: table, pks: map[string]types.AttributeValue{}}
}

// Write implements sink.Sink: it remembers the batch's partition keys
// before writing, so that a collection is remembered even when its write
// fails part way.
func (t *Tracker) Write(ctx context.Context, batch []*mapping.Item, res sink.Results) error {
	t.remember(batch)
	return t.Sink.Write(ctx, batch, res)
}

func (t *Tracker) remember(batch []*mapping.Item) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, it := range batch {
		if t.overflow {
			break
		}
		pk := it.Key[:it.PKLen]
		if _, ok := t.pks[pk]; ok {
			continue
		}
		if len(t.pks) == MaxTracked {
			t.overflow, t.pks = true, nil
			break
		}
		t.pks[pk] = t.table.PartitionKeyAttr(pk)
	}
}

// Remove implements sink.Remover (the pipeline deletes the parts of a
// failed split aggregate through it) when the wrapped sink does; the
// removed items' collections are remembered too.
func (t *Tracker) Remove(ctx context.Context, items []*mapping.Item) error {
	rm, ok := t.Sink.(sink.Remover)
	if !ok {
		return fmt.Errorf("the %T sink cannot delete", t.Sink)
	}
	t.remember(items)
	return rm.Remove(ctx, items)
}

// Written returns the partition keys written; ok is false when there were
// more than MaxTracked.
func (t *Tracker) Written() (pks []types.AttributeValue, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.overflow {
		return nil, false
	}
	pks = make([]types.AttributeValue, 0, len(t.pks))
	for _, v := range t.pks {
		pks = append(pks, v)
	}
	return pks, true
}
