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
//
// A sink may acknowledge late: the DynamoDB writer acknowledges every item
// before Write returns, but a sink that writes files makes an item durable
// only when its file is complete. Such a sink acknowledges from Write (when
// a file fills) or from Flush, which the pipeline calls when it would
// otherwise wait on items the sink holds (its in-flight budget is spent)
// and once the last batch is written. The pipeline's checkpoint moves only
// past rows whose items are acknowledged, so every acknowledgement must
// follow durability.
type Sink interface {
	// Write stores every item of batch, retrying throttled and failed
	// requests. It calls res.Acked with items once the destination has
	// durably accepted them (possibly several times, with subsets, and
	// possibly after Write has returned, from a later Write or Flush), and
	// res.Rejected for an item the destination refuses on its own (its
	// content is invalid). It returns nil once every item is acked,
	// rejected or held for a later acknowledgement, or an error that
	// should stop the run; items not acked by then were not written.
	// Write is called concurrently by several writers. Once Write has
	// returned, the pipeline reads only an item's Key, Origin and split
	// fields, so a sink that holds items may drop their Attrs.
	Write(ctx context.Context, batch []*mapping.Item, res Results) error
	// Flush makes durable and acknowledges (or rejects) every item handed
	// to Write before Flush was called, then returns; on an error or a
	// cancelled ctx the items it did not acknowledge count as not written.
	// It may be called concurrently with Write.
	Flush(ctx context.Context) error
	// Close ends the sink: items not acknowledged by then are abandoned
	// (never acknowledged), and what the sink holds is released. Nothing
	// is called after Close.
	Close() error
	// Stats returns the counters so far.
	Stats() Stats
}

// AcksOnWrite is embedded by sinks that acknowledge every item before
// Write returns: they hold nothing to flush or close.
type AcksOnWrite struct{}

// Flush implements Sink: nothing is held.
func (AcksOnWrite) Flush(context.Context) error { return nil }

// Close implements Sink: nothing is held.
func (AcksOnWrite) Close() error { return nil }

// Checkpointed is implemented by the Origin of items the pipeline hands to
// a sink: it reports whether the item's source row is behind the
// checkpoint's saved position, that is, a resumed run will not read it
// again. A sink whose durable state is saved with the checkpoint uses it
// to tell items a resumed run will produce again from those it will not.
type Checkpointed interface {
	Checkpointed() bool
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
