package sink

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/ddbjson"
	"github.com/dynafold/dynafold/internal/sdkcapture"
	"github.com/dynafold/dynafold/mapping"
)

// sdkBatchBody is what the SDK's serializer writes for pending.
func sdkBatchBody(t *testing.T, table string, pending []*mapping.Item) []byte {
	t.Helper()
	rec := &sdkcapture.Recorder{}
	_, err := sdkcapture.NewClient(rec).BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
		RequestItems:           map[string][]types.WriteRequest{table: writeRequests(pending)},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	require.NoError(t, err)
	return rec.Body()
}

func requireSameJSON(t *testing.T, want, got []byte) {
	t.Helper()
	w, err := ddbjson.Canonical(want)
	require.NoError(t, err)
	g, err := ddbjson.Canonical(got)
	require.NoError(t, err)
	if !bytes.Equal(w, g) {
		t.Fatalf("request bodies differ\nSDK:  %.300s\nours: %.300s", w, g)
	}
}

func bodyItem(key string, attrs map[string]types.AttributeValue, encoded bool) *mapping.Item {
	attrs["PK"] = &types.AttributeValueMemberS{Value: key}
	it := &mapping.Item{Key: key, PKLen: len(key), Attrs: attrs, Size: mapping.ItemSize(attrs)}
	if encoded {
		it.Body = ddbjson.AppendItem(nil, attrs)
	}
	return it
}

// TestBatchBodyMatchesSDK: a batch's body, joined from pre-encoded items,
// deletes and items without a Body, is what the SDK writes for the same
// input, up to key order; a 25-item batch of 400 KB items too.
func TestBatchBodyMatchesSDK(t *testing.T) {
	bin := bytes.Repeat([]byte{0xfb, 0xff, 0x00, 'a'}, 100*1024-16)
	cases := map[string][]*mapping.Item{
		"puts": {
			bodyItem("a", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "1.5"}}, true),
			bodyItem("b\u2028\"", map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberBOOL{Value: true}}}}, true),
		},
		"unencoded and deletes": {
			bodyItem("c", map[string]types.AttributeValue{"ss": &types.AttributeValueMemberSS{Value: []string{"x", "y"}}}, false),
			{Key: "d", PKLen: 1, Delete: true, Attrs: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "d"}}},
		},
	}
	var full []*mapping.Item
	for i := range MaxBatchItems {
		full = append(full, bodyItem(fmt.Sprintf("k%02d", i), map[string]types.AttributeValue{"bin": &types.AttributeValueMemberB{Value: bin}}, true))
	}
	require.LessOrEqual(t, full[0].Size, mapping.MaxItemBytes)
	cases["25 items of 400 KB"] = full
	for name, pending := range cases {
		t.Run(name, func(t *testing.T) {
			requireSameJSON(t, sdkBatchBody(t, "my-table", pending), appendBatch(nil, "my-table", pending))
		})
	}
	require.Less(t, len(appendBatch(nil, "t", full)), MaxBatchBytes, "25 items of 400 KB, base64 included, fit a request")
}

// TestWriterSendsBodyThroughSDK: the writer, given a real SDK client, sends
// the pre-encoded body, signed, and acknowledges the batch.
func TestWriterSendsBodyThroughSDK(t *testing.T) {
	rec := &sdkcapture.Recorder{}
	w := NewDynamoWriter(sdkcapture.NewClient(rec), &mapping.TableSchema{Name: "t", PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}}, WriterOptions{})
	batch := []*mapping.Item{
		bodyItem("a", map[string]types.AttributeValue{"v": &types.AttributeValueMemberS{Value: "x"}}, true),
		bodyItem("b", map[string]types.AttributeValue{"v": &types.AttributeValueMemberS{Value: "y"}}, false),
	}
	// The body marks the encoded item, to prove it, not Attrs, was sent.
	batch[0].Body = []byte(`{"PK":{"S":"a"},"v":{"S":"from-body"}}`)
	res := &countingResults{}
	require.NoError(t, w.Write(context.Background(), batch, res))
	require.Equal(t, 2, res.acked)
	// Item 1 has no body and is encoded from a map: compare up to key order.
	requireSameJSON(t, appendBatch(nil, "t", batch), rec.Body())
	require.Contains(t, string(rec.Body()), "from-body")
	h := rec.Header()
	require.Equal(t, "DynamoDB_20120810.BatchWriteItem", h.Get("X-Amz-Target"))
	require.Equal(t, "application/x-amz-json-1.0", h.Get("Content-Type"))
	require.Contains(t, h.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=k/")
}

// TestWriterRetriesUnprocessedFromSDK: UnprocessedItems, parsed by the SDK
// from the response to a pre-encoded body, are sent again, alone.
func TestWriterRetriesUnprocessedFromSDK(t *testing.T) {
	rec := &sdkcapture.Recorder{Responses: []string{`{"UnprocessedItems":{"t":[{"PutRequest":{"Item":{"PK":{"S":"b"},"v":{"S":"y"}}}}]}}`}}
	w := NewDynamoWriter(sdkcapture.NewClient(rec), &mapping.TableSchema{Name: "t", PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}},
		WriterOptions{Sleep: func(context.Context, time.Duration) error { return nil }})
	batch := []*mapping.Item{
		bodyItem("a", map[string]types.AttributeValue{"v": &types.AttributeValueMemberS{Value: "x"}}, true),
		bodyItem("b", map[string]types.AttributeValue{"v": &types.AttributeValueMemberS{Value: "y"}}, true),
	}
	res := &countingResults{}
	require.NoError(t, w.Write(context.Background(), batch, res))
	require.Equal(t, 2, res.acked)
	require.Equal(t, 2, rec.Requests())
	require.Equal(t, string(appendBatch(nil, "t", batch[1:])), string(rec.Body()))
	require.EqualValues(t, 1, w.Stats().UnprocessedItems)
}

// TestWriterSplitsBodiesOver16MB: control characters take six bytes each
// in JSON (\u0001), so 25 valid items of 400 KB can make a body far over
// 16 MB; the writer sends such a batch in requests that fit.
func TestWriterSplitsBodiesOver16MB(t *testing.T) {
	rec := &sizeRecorder{}
	w := NewDynamoWriter(sdkcapture.NewClient(&rec.Recorder), &mapping.TableSchema{Name: "t", PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}}, WriterOptions{})
	w.api = rec.wrap(w.api)
	ctrl := strings.Repeat("\x01", mapping.MaxItemBytes-100)
	var batch []*mapping.Item
	for i := range MaxBatchItems {
		batch = append(batch, bodyItem(fmt.Sprintf("k%02d", i), map[string]types.AttributeValue{"v": &types.AttributeValueMemberS{Value: ctrl}}, true))
	}
	require.Greater(t, len(appendBatch(nil, "t", batch)), 3*MaxBatchBytes)
	res := &countingResults{}
	require.NoError(t, w.Write(context.Background(), batch, res))
	require.Equal(t, MaxBatchItems, res.acked)
	require.Greater(t, len(rec.sizes), 1)
	for _, n := range rec.sizes {
		require.LessOrEqual(t, n, MaxBatchBytes)
	}
}

// sizeRecorder notes the size of each body the client sent.
type sizeRecorder struct {
	sdkcapture.Recorder
	sizes []int
}

func (r *sizeRecorder) wrap(api BatchWriteAPI) BatchWriteAPI {
	return batchWriteFunc(func(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
		out, err := api.BatchWriteItem(ctx, in, opts...)
		r.sizes = append(r.sizes, len(r.Body()))
		return out, err
	})
}

type batchWriteFunc func(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)

func (f batchWriteFunc) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	return f(ctx, in, opts...)
}
