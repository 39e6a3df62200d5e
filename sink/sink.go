// Package sink writes items to their destination: DynamoDB through
// BatchWriteItem with retries, back-off and an adaptive write rate, and the
// table management (create, check) that writing relies on. It knows nothing
// about SQL.
package sink

import (
	"context"

	"github.com/dynafold/dynafold/mapping"
)

// Sink stores batches of items.
type Sink interface {
	// Write stores every item of batch, retrying throttled and failed
	// requests. It calls res.Acked with items as soon as the destination has
	// durably accepted them (possibly several times, with subsets), and
	// res.Rejected for an item the destination refuses on its own (its
	// content is invalid). It returns nil once every item is acked or
	// rejected, or an error that should stop the run; items not acked by
	// then were not written. Write is called concurrently by several
	// writers.
	Write(ctx context.Context, batch []*mapping.Item, res Results) error
	// Stats returns the counters so far.
	Stats() Stats
}

// Results receives the outcome of items. Its methods are called
// concurrently by the writers.
type Results interface {
	// Acked reports items the destination has durably accepted.
	Acked(items []*mapping.Item)
	// Rejected reports an item the destination refuses because of its
	// content.
	Rejected(item *mapping.Item, err error)
	// Retried reports a request about to be sent again with these items;
	// throttled says whether throttling was the reason.
	Retried(items []*mapping.Item, throttled bool)
}

// Stats counts what a sink did.
type Stats struct {
	// Requests is every request sent, retries included.
	Requests int64 `json:"requests"`
	// Retried is requests sent again after a failure or partial result.
	Retried int64 `json:"retried_requests"`
	// Throttled is requests answered by throttling: an exception or
	// unprocessed items.
	Throttled int64 `json:"throttled_requests"`
	// UnprocessedItems is items returned unprocessed and sent again.
	UnprocessedItems int64 `json:"unprocessed_items"`
	// Items is items acknowledged.
	Items int64 `json:"items_written"`
	// WriteUnits is the write units the acknowledged items cost, computed
	// from their sizes as DynamoDB bills them.
	WriteUnits int64 `json:"write_units"`
	// ConsumedCapacity is what the service reported, where it reports it.
	ConsumedCapacity float64 `json:"consumed_capacity"`
	// RateCuts counts cuts of the write rate on throttling, and
	// RateCutsUndone those undone because they did not lower it.
	RateCuts       int64 `json:"rate_cuts"`
	RateCutsUndone int64 `json:"rate_cuts_undone"`
}
