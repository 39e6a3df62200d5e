package sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/retry"
)

// Deleter deletes items by key with BatchWriteItem DeleteRequests, for
// `migrate --prune`. Like the writer it retries throttled requests and
// unprocessed items itself, with capped backoff that stops on cancel.
type Deleter struct {
	api   BatchWriteAPI
	table string
	// backoff and sleep are replaceable so tests run without waiting.
	backoff     retry.Backoff
	sleep       func(context.Context, time.Duration) error
	maxAttempts int
}

// NewDeleter deletes from table.
func NewDeleter(api BatchWriteAPI, table string) *Deleter {
	return &Deleter{api: api, table: table, backoff: DefaultBackoff(), sleep: retry.Sleep, maxAttempts: 12}
}

// Delete deletes every key (at most MaxBatchItems per request) and returns
// once all are deleted, or the error that stopped it. Deleting a key that
// is not there succeeds. It may be called concurrently.
func (d *Deleter) Delete(ctx context.Context, keys []map[string]types.AttributeValue) error {
	for len(keys) > 0 {
		n := min(len(keys), MaxBatchItems)
		if err := d.deleteBatch(ctx, keys[:n]); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

func (d *Deleter) deleteBatch(ctx context.Context, keys []map[string]types.AttributeValue) error {
	// reqs are this batch's alone and only read by each attempt (the
	// SDK serializes every attempt from them); the unprocessed ones that
	// replace them are the SDK's own values.
	reqs := make([]types.WriteRequest, len(keys))
	for i, k := range keys {
		reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}}
	}
	policy := retry.Policy{Attempts: d.maxAttempts, Backoff: d.backoff, Sleep: d.sleep}
	err := retry.Do(ctx, policy, RetryClass, func(ctx context.Context) (bool, error) {
		out, err := d.api.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{d.table: reqs},
		}, noRetry)
		if err != nil {
			switch classify(err) {
			case classCanceled:
				if ctx.Err() != nil {
					return false, retry.Final(ctx.Err())
				}
				return false, retry.Final(err)
			case classThrottle, classTransient:
				return false, err
			}
			return false, retry.Final(fmt.Errorf("deleting from table %s: %w", d.table, err))
		}
		left := out.UnprocessedItems[d.table]
		progress := len(left) < len(reqs)
		if reqs = left; len(reqs) == 0 {
			return false, nil
		}
		return progress, ErrUnprocessed
	})
	var ex *retry.ExhaustedError
	switch {
	case !errors.As(err, &ex):
		return err
	case errors.Is(ex.Err, ErrUnprocessed):
		return fmt.Errorf("deleting from table %s: %d deletes still unprocessed after %d attempts", d.table, len(reqs), ex.Attempts)
	}
	return fmt.Errorf("deleting from table %s: %w", d.table, err)
}
