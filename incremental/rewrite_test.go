package incremental

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
)

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// fakeGets holds a table's items by PK; the first request leaves its last
// key unprocessed.
type fakeGets struct {
	items    map[string]map[string]types.AttributeValue
	requests int
}

func (f *fakeGets) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	f.requests++
	keys := in.RequestItems["t"].Keys
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	if f.requests == 1 && len(keys) > 1 {
		out.UnprocessedKeys = map[string]types.KeysAndAttributes{"t": {Keys: keys[len(keys)-1:]}}
		keys = keys[:len(keys)-1]
	}
	for _, k := range keys {
		if it, ok := f.items[k["PK"].(*types.AttributeValueMemberS).Value]; ok {
			out.Responses["t"] = append(out.Responses["t"], it)
		}
	}
	return out, nil
}

type innerSink struct {
	sink.AcksOnWrite
	got []*mapping.Item
}

func (s *innerSink) Write(_ context.Context, batch []*mapping.Item, res sink.Results) error {
	s.got = append(s.got, batch...)
	res.Acked(batch)
	return nil
}
func (s *innerSink) Stats() sink.Stats { return sink.Stats{Items: int64(len(s.got))} }

type results struct {
	mu    sync.Mutex
	acked []*mapping.Item
}

func (r *results) Acked(items []*mapping.Item) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acked = append(r.acked, items...)
}
func (r *results) Rejected(*mapping.Item, error) {}
func (r *results) Retried([]*mapping.Item, bool) {}

// The compare sink writes only the items that differ from the table or
// are missing, and acknowledges every item.
func TestCompareSinkWritesOnlyDifferingItems(t *testing.T) {
	item := func(pk, name string) *mapping.Item {
		return &mapping.Item{Key: pk, PKLen: len(pk), Attrs: map[string]types.AttributeValue{"PK": sv(pk), "Name": sv(name)}}
	}
	api := &fakeGets{items: map[string]map[string]types.AttributeValue{
		"same": {"PK": sv("same"), "Name": sv("a")},
		"diff": {"PK": sv("diff"), "Name": sv("old")},
	}}
	inner := &innerSink{}
	s := NewCompareSink(api, &mapping.TableSchema{Name: "t", PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}}, inner)
	s.sleep = func(context.Context, time.Duration) error { return nil }
	res := &results{}
	batch := []*mapping.Item{item("same", "a"), item("diff", "new"), item("missing", "x")}
	require.NoError(t, s.Write(context.Background(), batch, res))
	require.Equal(t, []*mapping.Item{batch[1], batch[2]}, inner.got)
	require.ElementsMatch(t, batch, res.acked)
	require.EqualValues(t, 3, s.Compared())
	require.EqualValues(t, 2, s.Rewritten())
	require.Equal(t, 2, api.requests, "the unprocessed key is asked for again")
}
