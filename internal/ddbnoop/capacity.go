package ddbnoop

import (
	"strings"
	"sync"
	"time"
)

// Simulated write capacity.
//
// Two optional token buckets, each refilled continuously at its rate in write
// units per second with a burst of exactly one second's worth (burst = rate),
// starting full:
//
//   - the table bucket (Options.WCU), one per table;
//   - the partition bucket (Options.PartitionWCU), one per distinct
//     partition-key value per table. Real DynamoDB limits a physical
//     partition to 1000 WCU/s; keying by partition-key value models the
//     worst case of one hot key.
//
// DynamoDB itself keeps up to 300 seconds of unused capacity as burst; the
// one-second burst here is deliberately stingy so throttling shows up in
// short tests and benchmarks.
//
// Each write request of a batch is considered in request order and admitted
// only if both buckets hold its write units at that moment; admitted requests
// take their units from both. A request that is not admitted does not stop
// later ones (a smaller item, or one for another partition, may still fit),
// which is how DynamoDB treats items independently. A request costing more
// than a whole burst is admitted when the bucket is full, leaving the bucket
// in debt, so that oversized items cannot be starved forever.

// bucket is a token bucket whose tokens may go negative (debt).
type bucket struct {
	tokens float64
	last   int64 // UnixNano of the last refill
}

func (b *bucket) refill(now int64, rate float64) {
	if now > b.last {
		b.tokens += float64(now-b.last) * rate / 1e9
		if b.tokens > rate {
			b.tokens = rate
		}
		b.last = now
	}
}

// fits reports whether w units may be taken from a bucket with burst rate.
func (b *bucket) fits(w, rate float64) bool {
	return b.tokens >= w || b.tokens >= rate
}

type capacity struct {
	tableRate float64 // 0 = unlimited
	partRate  float64 // 0 = unlimited

	mu        sync.Mutex
	tables    map[string]*bucket
	parts     map[string]*bucket
	lastSweep int64
	scratch   []byte
}

func newCapacity(tableRate, partRate float64) *capacity {
	return &capacity{
		tableRate: tableRate,
		partRate:  partRate,
		tables:    map[string]*bucket{},
		parts:     map[string]*bucket{},
	}
}

func (c *capacity) enabled() bool { return c.tableRate > 0 || c.partRate > 0 }

// admit sets admitted on each request of b that the buckets allow, and
// charges the buckets for them.
func (c *capacity) admit(b *batch, now time.Time) {
	if !c.enabled() {
		for i := range b.reqs {
			b.reqs[i].admitted = true
		}
		return
	}
	ns := now.UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(ns)
	for i := range b.reqs {
		r := &b.reqs[i]
		name := b.tables[r.table].name
		w := float64(r.wcu)
		var tb, pb *bucket
		if c.tableRate > 0 {
			tb = c.tables[string(name)]
			if tb == nil {
				tb = &bucket{tokens: c.tableRate, last: ns}
				c.tables[string(name)] = tb
			}
			tb.refill(ns, c.tableRate)
			if !tb.fits(w, c.tableRate) {
				continue
			}
		}
		if c.partRate > 0 {
			// Key: table name, NUL, key type, raw key value. Looking up
			// with string(scratch) does not allocate; inserting does.
			c.scratch = append(append(append(append(c.scratch[:0], name...), 0), byte(r.pkType)), r.pk...)
			pb = c.parts[string(c.scratch)]
			if pb == nil {
				pb = &bucket{tokens: c.partRate, last: ns}
				c.parts[string(c.scratch)] = pb
			}
			pb.refill(ns, c.partRate)
			if !pb.fits(w, c.partRate) {
				continue
			}
		}
		if tb != nil {
			tb.tokens -= w
		}
		if pb != nil {
			pb.tokens -= w
		}
		r.admitted = true
	}
}

// sweep drops partition buckets idle for a second or more, at most once a
// second. With burst = one second's worth, such a bucket has refilled
// completely and is indistinguishable from a new one, so dropping it changes
// nothing but memory: a migration touching millions of keys keeps only the
// last second's keys.
func (c *capacity) sweep(now int64) {
	if now-c.lastSweep < int64(time.Second) {
		return
	}
	c.lastSweep = now
	for k, b := range c.parts {
		if now-b.last >= int64(time.Second) {
			delete(c.parts, k)
		}
	}
}

// forgetTable drops a deleted table's buckets so a re-created table starts
// with full buckets.
func (c *capacity) forgetTable(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.tables, name)
	prefix := name + "\x00"
	for k := range c.parts {
		if strings.HasPrefix(k, prefix) {
			delete(c.parts, k)
		}
	}
}
