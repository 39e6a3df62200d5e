package sink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/retry"
)

// BatchWrite limits (Amazon DynamoDB API Reference, BatchWriteItem).
const (
	// MaxBatchItems: BatchWriteItem accepts at most 25 put or delete requests.
	MaxBatchItems = 25
	// MaxBatchBytes: the total request size is at most 16 MB.
	MaxBatchBytes = 16 * 1024 * 1024
)

// ErrGaveUp marks a write abandoned after the retries allowed for
// throttling and transient failures: the table may take it later, so a
// run that stops on it can be resumed.
var ErrGaveUp = errors.New("giving up")

// BatchWriteAPI is the part of the DynamoDB client the writer uses; tests
// and the benchmark substitute fakes that throttle or fail.
type BatchWriteAPI interface {
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// DynamoWriter writes batches to one table with BatchWriteItem.
// It acknowledges every item before Write returns.
type DynamoWriter struct {
	AcksOnWrite
	api    BatchWriteAPI
	table  string
	schema *mapping.TableSchema
	key    keyNames
	rate   *AdaptiveRate
	// bodies encodes the request bodies (sharedBodies; a test's own).
	bodies *bodyPool
	// backoff and sleep are replaceable so tests run without waiting.
	backoff retry.Backoff
	sleep   func(context.Context, time.Duration) error
	// maxAttempts bounds consecutive attempts that make no progress.
	maxAttempts int

	requests, retried, throttled, unprocessed, items, units atomic.Int64
	capMu                                                   sync.Mutex
	consumed                                                float64
}

var _ Sink = (*DynamoWriter)(nil)

type keyNames struct{ pk, sk string }

// WriterOptions tune a DynamoWriter.
type WriterOptions struct {
	// Rate paces the writes; nil means unlimited with adaptive back-off.
	Rate *AdaptiveRate
	// MaxAttempts bounds consecutive attempts of one batch that write
	// nothing (default 12, about a minute of backing off).
	MaxAttempts int
	Backoff     *retry.Backoff
	Sleep       func(context.Context, time.Duration) error
}

// NewDynamoWriter writes to table, whose key attributes are named by schema.
func NewDynamoWriter(api BatchWriteAPI, schema *mapping.TableSchema, o WriterOptions) *DynamoWriter {
	w := &DynamoWriter{api: api, table: schema.Name, schema: schema, rate: o.Rate, maxAttempts: o.MaxAttempts, sleep: o.Sleep, bodies: sharedBodies}
	w.key.pk = schema.PK.Name
	if schema.SK != nil {
		w.key.sk = schema.SK.Name
	}
	if w.rate == nil {
		w.rate = NewAdaptiveRate(0)
	}
	if w.maxAttempts <= 0 {
		w.maxAttempts = 12
	}
	w.backoff = DefaultBackoff()
	if o.Backoff != nil {
		w.backoff = *o.Backoff
	}
	if w.sleep == nil {
		w.sleep = retry.Sleep
	}
	return w
}

// Rate returns the writer's rate controller.
func (w *DynamoWriter) Rate() *AdaptiveRate { return w.rate }

// noRetry turns the SDK's retryer off for BatchWriteItem: Write retries
// itself so that every throttle is counted and slows the rate.
func noRetry(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} }

// Write implements Sink.
func (w *DynamoWriter) Write(ctx context.Context, batch []*mapping.Item, res Results) error {
	if len(batch) == 0 {
		return nil
	}
	pending := batch
	sent := false
	policy := retry.Policy{Attempts: w.maxAttempts, Backoff: w.backoff, Sleep: w.sleep}
	err := retry.Do(ctx, policy, RetryClass, func(ctx context.Context) (bool, error) {
		units := 0
		for _, it := range pending {
			units += mapping.WriteUnits(it.Size)
		}
		if err := w.rate.Wait(ctx, units); err != nil {
			return false, retry.Final(err)
		}
		body := w.bodies.encode(w.table, pending)
		if len(body.Bytes()) > MaxBatchBytes && len(pending) > 1 {
			// Items near 400 KB of binary grow by a third in base64: send
			// such a batch as two requests.
			body.Release()
			half := len(pending) / 2
			if err := w.Write(ctx, pending[:half], res); err != nil {
				return false, retry.Final(err)
			}
			return false, retry.Final(w.Write(ctx, pending[half:], res))
		}
		w.requests.Add(1)
		if sent {
			w.retried.Add(1)
		}
		sent = true
		out, err := w.send(ctx, pending, body)
		// Every send of this body has returned (a guard's resends
		// included): this attempt is its owner, and lets it go here,
		// once. The next attempt encodes what is still pending anew.
		body.Release()
		if err != nil {
			return false, w.failed(ctx, pending, res, err)
		}
		w.addConsumed(out.ConsumedCapacity)
		left := w.leftOver(pending, out.UnprocessedItems[w.table])
		done := pending
		if len(left) > 0 {
			done = subtract(pending, left)
		}
		if len(done) > 0 {
			doneUnits := 0
			for _, it := range done {
				doneUnits += mapping.WriteUnits(it.Size)
			}
			w.items.Add(int64(len(done)))
			w.units.Add(int64(doneUnits))
			w.rate.Succeeded(doneUnits)
			res.Acked(done)
		}
		if len(left) == 0 {
			return false, nil
		}
		// DynamoDB returns unprocessed items when the table or a partition
		// is over its capacity: treat it as throttling.
		w.throttled.Add(1)
		w.unprocessed.Add(int64(len(left)))
		w.rate.Throttled()
		res.Retried(left, true)
		pending = left
		return len(done) > 0, ErrUnprocessed
	})
	var ex *retry.ExhaustedError
	switch {
	case !errors.As(err, &ex):
		return err
	case errors.Is(ex.Err, ErrUnprocessed):
		return fmt.Errorf("writing to table %s: %w: %d items still unprocessed after %d attempts", w.table, ErrGaveUp, len(pending), ex.Attempts)
	}
	return fmt.Errorf("writing to table %s: %w after %d attempts: %w", w.table, ErrGaveUp, ex.Attempts, ex.Err)
}

// failed deals with a request of pending that failed with err: it counts
// and reports throttling and transient failures, which it returns for
// Write to retry, finds the invalid item of a refused batch, and returns
// any other error as Write's (retry.Final).
func (w *DynamoWriter) failed(ctx context.Context, pending []*mapping.Item, res Results, err error) error {
	switch classify(err) {
	case classCanceled:
		if ctx.Err() != nil {
			return retry.Final(ctx.Err())
		}
		return retry.Final(err)
	case classThrottle:
		w.throttled.Add(1)
		w.rate.Throttled()
		res.Retried(pending, true)
		return err
	case classTransient:
		res.Retried(pending, false)
		return err
	case classInvalid:
		return retry.Final(w.isolate(ctx, pending, res, err))
	}
	return retry.Final(fmt.Errorf("writing to table %s: %w", w.table, err))
}

// BodySender sends a BatchWriteItem request body encoded in advance
// (ReachGuard, over a DirectSender); pending are the items it holds. The
// caller owns body (see Body): SendBody may send it more than once, and
// nothing may read it after SendBody returns.
type BodySender interface {
	SendBody(ctx context.Context, table string, pending []*mapping.Item, body *Body) (*dynamodb.BatchWriteItemOutput, error)
}

// send sends one batch: as a body where the API takes one, else through
// BatchWriteItem with the body (fakes read the input).
func (w *DynamoWriter) send(ctx context.Context, pending []*mapping.Item, body *Body) (*dynamodb.BatchWriteItemOutput, error) {
	if bs, ok := w.api.(BodySender); ok {
		return bs.SendBody(ctx, w.table, pending, body)
	}
	return w.api.BatchWriteItem(ctx, batchInput(w.table, pending), noRetry, withBody(body.Bytes()))
}

// batchInput is the SDK's input for pending.
func batchInput(table string, pending []*mapping.Item) *dynamodb.BatchWriteItemInput {
	return &dynamodb.BatchWriteItemInput{
		RequestItems:           map[string][]types.WriteRequest{table: writeRequests(pending)},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
}

// writeRequests describes pending as the SDK's input: the client sends the
// pre-encoded body instead (withBody), but validates this input and takes
// the table name from it, and test fakes read it.
func writeRequests(pending []*mapping.Item) []types.WriteRequest {
	reqs := make([]types.WriteRequest, len(pending))
	puts := make([]types.PutRequest, len(pending))
	for i, it := range pending {
		if it.Delete {
			reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: it.Attrs}}
			continue
		}
		puts[i].Item = it.Attributes()
		reqs[i] = types.WriteRequest{PutRequest: &puts[i]}
	}
	return reqs
}

// isolate finds which items of a refused batch are invalid by writing them
// one at a time, so that one bad item is reported by its source row instead
// of failing 24 good ones.
func (w *DynamoWriter) isolate(ctx context.Context, pending []*mapping.Item, res Results, cause error) error {
	if len(pending) == 1 {
		res.Rejected(pending[0], fmt.Errorf("DynamoDB refused the item: %w", cause))
		return nil
	}
	for _, it := range pending {
		if err := w.Write(ctx, []*mapping.Item{it}, res); err != nil {
			return err
		}
	}
	return nil
}

// leftOver maps the unprocessed requests back to the batch's items by
// their key.
func (w *DynamoWriter) leftOver(pending []*mapping.Item, reqs []types.WriteRequest) []*mapping.Item {
	if len(reqs) == 0 {
		return nil
	}
	byKey := make(map[string]*mapping.Item, len(pending))
	for _, it := range pending {
		byKey[it.Key] = it
	}
	left := make([]*mapping.Item, 0, len(reqs))
	for _, r := range reqs {
		var attrs map[string]types.AttributeValue
		switch {
		case r.PutRequest != nil:
			attrs = r.PutRequest.Item
		case r.DeleteRequest != nil:
			attrs = r.DeleteRequest.Key
		default:
			continue
		}
		k, ok := mapping.ItemKey(attrs, w.key.pk, w.key.sk)
		it, found := byKey[k]
		if !ok || !found {
			// Unrecognisable: resend everything rather than lose an item.
			return pending
		}
		left = append(left, it)
	}
	return left
}

func subtract(all, remove []*mapping.Item) []*mapping.Item {
	gone := make(map[*mapping.Item]bool, len(remove))
	for _, it := range remove {
		gone[it] = true
	}
	out := make([]*mapping.Item, 0, len(all)-len(remove))
	for _, it := range all {
		if !gone[it] {
			out = append(out, it)
		}
	}
	return out
}

func (w *DynamoWriter) addConsumed(cc []types.ConsumedCapacity) {
	var sum float64
	for _, c := range cc {
		if c.CapacityUnits != nil {
			sum += *c.CapacityUnits
		}
	}
	if sum == 0 {
		return
	}
	w.capMu.Lock()
	w.consumed += sum
	w.capMu.Unlock()
}

// Rearm lets the next request wait for an endpoint the writer's guard
// gave up on (see ReachGuard.Rearm); without a guard it does nothing.
func (w *DynamoWriter) Rearm() {
	if g, ok := w.api.(interface{ Rearm() }); ok {
		g.Rearm()
	}
}

// Waiting reports whether the writer's guard is waiting for an endpoint
// that stopped accepting connections (see ReachGuard).
func (w *DynamoWriter) Waiting() bool {
	g, ok := w.api.(interface{ Waiting() bool })
	return ok && g.Waiting()
}

// Stats implements Sink.
func (w *DynamoWriter) Stats() Stats {
	w.capMu.Lock()
	consumed := w.consumed
	w.capMu.Unlock()
	return Stats{
		Requests:         w.requests.Load(),
		Retried:          w.retried.Load(),
		Throttled:        w.throttled.Load(),
		UnprocessedItems: w.unprocessed.Load(),
		Items:            w.items.Load(),
		WriteUnits:       w.units.Load(),
		ConsumedCapacity: consumed,
		RateCuts:         w.rate.Cuts(),
		RateCutsUndone:   w.rate.Undone(),
	}
}
