package incremental

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/retry"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/verify"
)

// The nest check. A nested child that moves to another parent or is
// hard-deleted leaves no trace in the source that points at its old
// parent: nothing stamps the old parent, so the narrowed pass never reads
// it, and the key sweep sees its key still produced. Its item still holds
// the child. The nest check therefore reads every parent of a nest-bearing
// entity with its children, builds its items and compares them with the
// table; only the items that differ are written. Its cost is a read of
// those entities and a lookup of their items, not a rewrite.

// GetAPI is the part of the DynamoDB client the nest check reads with.
type GetAPI = sink.GetAPI

// maxBatchGetKeys: BatchGetItem accepts at most 100 keys per request.
const maxBatchGetKeys = 100

// maxGetAttempts bounds consecutive BatchGetItem attempts that make no
// progress, as verify's lookups do.
const maxGetAttempts = 12

// CompareSink writes, of the items it is given, only those that differ
// from the table's (or are missing); it acknowledges the others without
// writing them.
type CompareSink struct {
	api    GetAPI
	table  string
	schema *mapping.TableSchema
	inner  sink.Sink
	// Backoff and Sleep pace retries of unprocessed keys.
	backoff retry.Backoff
	sleep   func(context.Context, time.Duration) error

	compared, rewritten atomic.Int64
}

var _ sink.Sink = (*CompareSink)(nil)

// NewCompareSink compares through api with the table of schema and writes
// the differing items through inner.
func NewCompareSink(api GetAPI, schema *mapping.TableSchema, inner sink.Sink) *CompareSink {
	return &CompareSink{api: api, table: schema.Name, schema: schema, inner: inner, backoff: sink.DefaultBackoff(), sleep: retry.Sleep}
}

// Write implements sink.Sink.
func (s *CompareSink) Write(ctx context.Context, batch []*mapping.Item, res sink.Results) error {
	var same, differ []*mapping.Item
	for start := 0; start < len(batch); start += maxBatchGetKeys {
		part := batch[start:min(start+maxBatchGetKeys, len(batch))]
		got, err := s.get(ctx, part)
		if err != nil {
			return err
		}
		for _, it := range part {
			if cur, ok := got[it.Key]; ok && verify.EqualItems(cur, it.Attributes()) {
				same = append(same, it)
			} else {
				differ = append(differ, it)
			}
		}
	}
	s.compared.Add(int64(len(batch)))
	if len(same) > 0 {
		res.Acked(same)
	}
	if len(differ) == 0 {
		return nil
	}
	s.rewritten.Add(int64(len(differ)))
	return s.inner.Write(ctx, differ, res)
}

// get reads the items of part by key, consistently, sending unprocessed
// keys again with backoff; the result is keyed by mapping.Item.Key.
func (s *CompareSink) get(ctx context.Context, part []*mapping.Item) (map[string]map[string]types.AttributeValue, error) {
	// keys are built for this read alone; GetItems' retries read them (or
	// the SDK's unprocessed keys) and nothing else.
	byKey := make(map[string]*mapping.Item, len(part))
	keys := make([]map[string]types.AttributeValue, 0, len(part))
	for _, it := range part {
		if _, dup := byKey[it.Key]; dup {
			continue
		}
		byKey[it.Key] = it
		keys = append(keys, s.schema.KeyAttributes(it))
	}
	out := make(map[string]map[string]types.AttributeValue, len(part))
	policy := retry.Policy{Attempts: maxGetAttempts, Backoff: s.backoff, Sleep: s.sleep}
	err := sink.GetItems(ctx, s.api, s.table, keys, policy, func(item map[string]types.AttributeValue) {
		if k, ok := s.schema.ItemKey(item); ok {
			out[k] = item
		}
	})
	var ex *sink.GetExhaustedError
	if errors.As(err, &ex) {
		last := ex.Err // the last request's error: none when it left keys unprocessed
		if ex.Unprocessed() {
			last = nil
		}
		return nil, fmt.Errorf("reading table %s: %d keys still unprocessed after %d attempts (last error: %v)", s.table, ex.Left, ex.Attempts, last)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Stats implements sink.Sink: the inner sink's, which counts only the
// items rewritten.
func (s *CompareSink) Stats() sink.Stats { return s.inner.Stats() }

// Compared is how many items were compared; Rewritten how many of them
// differed from the table and were written.
func (s *CompareSink) Compared() int64  { return s.compared.Load() }
func (s *CompareSink) Rewritten() int64 { return s.rewritten.Load() }

// Flush implements sink.Sink: what is held is the inner sink's.
func (s *CompareSink) Flush(ctx context.Context) error { return s.inner.Flush(ctx) }

// Close implements sink.Sink.
func (s *CompareSink) Close() error { return s.inner.Close() }
