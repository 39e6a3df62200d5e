package sink

import (
	"errors"
	"time"

	"github.com/dynafold/dynafold/retry"
)

// DefaultBackoff starts at 25 ms and stops growing at 5 s: DynamoDB
// throttling clears within seconds, and longer sleeps only idle a writer.
// Full jitter, so that writers throttled at the same moment do not retry
// in lock step.
func DefaultBackoff() retry.Backoff {
	return retry.Backoff{Base: 25 * time.Millisecond, Max: 5 * time.Second, Rand: retry.FullJitter}
}

// ErrUnprocessed is an attempt that left part of a batch unprocessed
// (BatchWriteItem's UnprocessedItems, BatchGetItem's UnprocessedKeys):
// the table or a partition is over its capacity, so it is retried as
// throttling is.
var ErrUnprocessed = errors.New("unprocessed items")

// RetryClass is the classification hook for retry.Do around a DynamoDB
// request: throttling, unprocessed items, server errors and broken
// connections are retried; anything else ends the work.
func RetryClass(err error) retry.Class {
	if errors.Is(err, ErrUnprocessed) || Retryable(err) {
		return retry.Retry
	}
	return retry.Fatal
}
