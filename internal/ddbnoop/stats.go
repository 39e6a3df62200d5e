package ddbnoop

import (
	"sync"
	"sync/atomic"
	"time"
)

// Stats is a snapshot of the server's counters, served as JSON by GET /stats.
type Stats struct {
	// Requests counts every DynamoDB API request, of any operation.
	Requests int64 `json:"requests"`
	// BatchWriteRequests counts BatchWriteItem calls, including rejected ones.
	BatchWriteRequests int64 `json:"batch_write_requests"`
	// Items counts write requests (puts and deletes) admitted, i.e. that a
	// real table would have applied.
	Items int64 `json:"items"`
	// WriteUnits is the base table's write units for admitted items.
	WriteUnits int64 `json:"write_units"`
	// GSIWriteUnits is the extra write units admitted items cost in GSIs.
	GSIWriteUnits int64 `json:"gsi_write_units"`
	// ItemBytes is the summed DynamoDB size of admitted items.
	ItemBytes int64 `json:"item_bytes"`
	// ThrottledRequests counts BatchWriteItem calls answered with
	// ProvisionedThroughputExceededException (nothing admitted).
	ThrottledRequests int64 `json:"throttled_requests"`
	// ThrottledItems counts the write requests in those calls.
	ThrottledItems int64 `json:"throttled_items"`
	// UnprocessedItems counts write requests returned in UnprocessedItems.
	UnprocessedItems int64 `json:"unprocessed_items"`
	// Errors counts BatchWriteItem calls rejected as invalid.
	Errors int64 `json:"errors"`
	// ConnectionsOpened counts TCP connections accepted: with keep-alive
	// it stays near the client's requests in flight.
	ConnectionsOpened int64 `json:"connections_opened"`
	// Series holds per-second admitted items and write units for up to the
	// last seriesLen seconds that saw any, oldest first.
	Series []SecondStats `json:"series,omitempty"`
}

// SecondStats is one second of Stats.Series.
type SecondStats struct {
	Unix       int64 `json:"unix"`
	Items      int64 `json:"items"`
	WriteUnits int64 `json:"write_units"`
}

const seriesLen = 60

// counters are updated with atomics on the hot path; only the per-second
// series takes a lock, once per admitted batch.
type counters struct {
	requests          atomic.Int64
	batchWrites       atomic.Int64
	items             atomic.Int64
	writeUnits        atomic.Int64
	gsiWriteUnits     atomic.Int64
	itemBytes         atomic.Int64
	throttledRequests atomic.Int64
	throttledItems    atomic.Int64
	unprocessed       atomic.Int64
	errors            atomic.Int64
	connections       atomic.Int64

	mu     sync.Mutex
	series [seriesLen]SecondStats // ring indexed by Unix % seriesLen
}

// record accounts for one BatchWriteItem that admitted at least one item.
func (c *counters) record(now time.Time, items, units, gsiUnits, bytes, unprocessed int64) {
	c.items.Add(items)
	c.writeUnits.Add(units)
	c.gsiWriteUnits.Add(gsiUnits)
	c.itemBytes.Add(bytes)
	c.unprocessed.Add(unprocessed)
	sec := now.Unix()
	c.mu.Lock()
	slot := &c.series[sec%seriesLen]
	if slot.Unix != sec {
		*slot = SecondStats{Unix: sec}
	}
	slot.Items += items
	slot.WriteUnits += units
	c.mu.Unlock()
}

func (c *counters) snapshot(now time.Time) Stats {
	s := Stats{
		Requests:           c.requests.Load(),
		BatchWriteRequests: c.batchWrites.Load(),
		Items:              c.items.Load(),
		WriteUnits:         c.writeUnits.Load(),
		GSIWriteUnits:      c.gsiWriteUnits.Load(),
		ItemBytes:          c.itemBytes.Load(),
		ThrottledRequests:  c.throttledRequests.Load(),
		ThrottledItems:     c.throttledItems.Load(),
		UnprocessedItems:   c.unprocessed.Load(),
		Errors:             c.errors.Load(),
		ConnectionsOpened:  c.connections.Load(),
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for sec := now.Unix() - seriesLen + 1; sec <= now.Unix(); sec++ {
		if slot := c.series[(sec%seriesLen+seriesLen)%seriesLen]; slot.Unix == sec {
			s.Series = append(s.Series, slot)
		}
	}
	return s
}

func (c *counters) reset() {
	for _, a := range []*atomic.Int64{
		&c.requests, &c.batchWrites, &c.items, &c.writeUnits, &c.gsiWriteUnits, &c.itemBytes,
		&c.throttledRequests, &c.throttledItems, &c.unprocessed, &c.errors, &c.connections,
	} {
		a.Store(0)
	}
	c.mu.Lock()
	c.series = [seriesLen]SecondStats{}
	c.mu.Unlock()
}
