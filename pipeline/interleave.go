package pipeline

import (
	"context"
	"time"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
)

// spreadKeys is how many partition keys the batcher tries to have in hand
// before it sends a batch. DynamoDB gives one partition at most 1,000 write
// units a second; spread over 256 keys, a load of 100,000 items a second
// puts about 400 a second on each.
const spreadKeys = 256

// windowBytes bounds the items held, by size, so that large items (nested
// aggregates of tens of kilobytes) cannot fill memory before the item
// count bound is reached.
const windowBytes = 32 << 20

// interleave groups items into batches so that consecutive batches spread
// over many partition keys. Rows arrive in source-key order, which often
// means one item collection after another; written in that order, a large
// collection would hit one partition. The batcher holds items by partition
// key until it has spreadKeys keys (or window items) and fills each batch
// round-robin, one item per key in turn.
//
// Keys are unique within a run (dedupe holds back repeats), so a batch
// never carries the same key twice, which BatchWriteItem would refuse.
//
// The head of a split aggregate goes through gates (nil: none): it is held
// until its parts are acknowledged, and the batcher finishes only once no
// head is held.
func interleave(ctx context.Context, in <-chan []*mapping.Item, out chan<- []*mapping.Item, window int, gates *splitGates) error {
	q := newKeyQueues()
	emit := func() bool {
		batch := q.take(sink.MaxBatchItems)
		select {
		case out <- batch:
			return true
		case <-ctx.Done():
			return false
		}
	}
	// A short idle flush keeps small runs and the tail of a run moving.
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	for {
		if q.n >= window || q.bytes >= windowBytes || (len(q.byKey) >= spreadKeys && q.n >= sink.MaxBatchItems) {
			if !emit() {
				return nil
			}
			continue
		}
		if in == nil { // every item is in: send what is held, wait for held heads
			if q.n > 0 {
				if !emit() {
					return nil
				}
				continue
			}
			if gates.idle() {
				return nil
			}
		}
		if q.n > 0 {
			idle.Reset(20 * time.Millisecond)
		}
		select {
		case chunk, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			for _, it := range chunk {
				if gates.admit(it) {
					q.push(it)
				}
			}
		case <-gates.wakeC():
			for _, it := range gates.take() {
				q.push(it)
			}
		case <-idle.C:
			for q.n > 0 && q.n < window {
				if !emit() {
					return nil
				}
				if len(in) > 0 {
					break
				}
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// keyQueues holds items per partition key, with the keys that have items
// in a FIFO: taking an item moves its key to the back, which makes the
// batches round-robin over keys in O(1) per item.
type keyQueues struct {
	byKey map[string]*keyQueue
	fifo  []*keyQueue
	head  int
	n     int
	bytes int
	// free are emptied queues, kept with their capacity: most keys come
	// and go (a collection's items arrive together), and a queue and its
	// growing slice per key were a third of the batcher's allocations.
	free []*keyQueue
}

type keyQueue struct {
	pk    string
	items []*mapping.Item
	next  int // items before next are taken
}

func newKeyQueues() *keyQueues { return &keyQueues{byKey: map[string]*keyQueue{}} }

func (q *keyQueues) push(it *mapping.Item) {
	pk := it.PartitionKey()
	kq := q.byKey[pk]
	if kq == nil {
		if n := len(q.free); n > 0 {
			kq, q.free = q.free[n-1], q.free[:n-1]
			kq.pk = pk
		} else {
			kq = &keyQueue{pk: pk}
		}
		q.byKey[pk] = kq
		q.fifo = append(q.fifo, kq)
	}
	kq.items = append(kq.items, it)
	q.n++
	q.bytes += it.Size
}

// take removes up to n items, one per partition key in turn; a key comes
// round again in the same batch only when there are fewer keys than n.
func (q *keyQueues) take(n int) []*mapping.Item {
	batch := make([]*mapping.Item, 0, min(n, q.n))
	for len(batch) < n && q.n > 0 {
		kq := q.fifo[q.head]
		q.fifo[q.head] = nil
		q.head++
		it := kq.items[kq.next]
		batch = append(batch, it)
		q.bytes -= it.Size
		kq.items[kq.next] = nil
		kq.next++
		q.n--
		if kq.next < len(kq.items) {
			q.fifo = append(q.fifo, kq)
		} else {
			delete(q.byKey, kq.pk)
			kq.items, kq.next, kq.pk = kq.items[:0], 0, ""
			q.free = append(q.free, kq)
		}
	}
	if q.head > 1024 && q.head*2 > len(q.fifo) {
		q.fifo = append(q.fifo[:0:0], q.fifo[q.head:]...)
		q.head = 0
	}
	return batch
}
