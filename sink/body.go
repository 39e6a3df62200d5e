package sink

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/dynafold/dynafold/ddbjson"
	"github.com/dynafold/dynafold/mapping"
)

// The BatchWriteItem request body is the batch's items, each encoded once
// to DynamoDB JSON (mapping.Item.Body, filled by the builder), joined in
// the framing the SDK would write:
//
//	{"RequestItems":{"table":[{"PutRequest":{"Item":{…}}},…]},"ReturnConsumedCapacity":"TOTAL"}
//
// A real client's body is sent by DirectSender (direct.go), which learns
// the request from the SDK once and parses answers with the SDK's own
// protocol; fakes in tests, and requests the SDK does not sign with SigV4,
// go through the client with withBody.

// batchBody encodes pending as a BatchWriteItem request body for table.
// Items without a pre-encoded Body (deletes, items built outside the
// migrate hot path) are encoded from their attributes here.
func batchBody(table string, pending []*mapping.Item) []byte {
	n := 64 + len(table)
	for _, it := range pending {
		n += 32 + len(it.Body)
		if it.Body == nil {
			n += it.Size + 16*len(it.Attrs)
		}
	}
	b := newBodyBuffer(n)
	b = append(b, `{"RequestItems":{`...)
	b = ddbjson.AppendString(b, table)
	b = append(b, ":["...)
	for i, it := range pending {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case it.Delete:
			b = append(b, `{"DeleteRequest":{"Key":`...)
			b = ddbjson.AppendItem(b, it.Attrs)
		case it.Body != nil:
			b = append(b, `{"PutRequest":{"Item":`...)
			b = append(b, it.Body...)
		default:
			b = append(b, `{"PutRequest":{"Item":`...)
			b = ddbjson.AppendItem(b, it.Attrs)
		}
		b = append(b, "}}"...)
	}
	return append(b, `]},"ReturnConsumedCapacity":"TOTAL"}`...)
}

// Request bodies are recycled: a fresh 10 KB buffer per request was a
// tenth of the writer's allocations. A body goes back only once the round
// trip has returned and the body has been closed (sentBody): net/http may
// still read a body after RoundTrip returns (it closes it when done), and a
// RoundTripper wrapping it may read it late. A body never closed is left
// to the garbage collector.
var bodyBuffers sync.Pool

// onRecycle, when set by a test, sees every buffer recycled.
var onRecycle func([]byte)

// sentBody is a request body over a pooled buffer. Its buffer is recycled
// when both holders released it: the sender after the round trip, and the
// transport by closing it (once; further closes are no-ops).
type sentBody struct {
	*bytes.Reader
	buf    []byte
	refs   atomic.Int32
	closed atomic.Bool
}

func newSentBody(buf []byte) *sentBody {
	b := &sentBody{Reader: bytes.NewReader(buf), buf: buf}
	b.refs.Store(2)
	return b
}

func (b *sentBody) Close() error {
	if b.closed.CompareAndSwap(false, true) {
		b.release()
	}
	return nil
}

func (b *sentBody) release() {
	if b.refs.Add(-1) == 0 {
		recycleBody(b.buf)
	}
}

// maxRecycled: larger bodies (items of hundreds of KB) are not kept.
const maxRecycled = 256 << 10

func newBodyBuffer(n int) []byte {
	if p, ok := bodyBuffers.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]byte, 0, n)
}

// recycleBody hands a body's buffer back; nothing may read it after.
func recycleBody(b []byte) {
	if onRecycle != nil {
		onRecycle(b)
	}
	if cap(b) <= maxRecycled {
		b = b[:0]
		bodyBuffers.Put(&b)
	}
}

// withBody makes a BatchWriteItem call send body instead of serializing
// its input. The input still goes through the SDK's validation and
// endpoint parameters (the table name), and must describe the same items
// (fakes in tests read it).
func withBody(body []byte) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.Protocol = bodyProtocol{ClientProtocol: o.Protocol, body: body}
	}
}

// bodyProtocol is the client's own protocol (awsJson 1.0) with a request
// body encoded in advance: it lets that protocol set the method, path and
// headers (X-Amz-Target, Content-Type) from an empty input, then replaces
// the body. Responses are parsed by the wrapped protocol unchanged.
type bodyProtocol struct {
	smithyhttp.ClientProtocol
	body []byte
}

// SerializeRequest implements smithyhttp.ClientProtocol.
func (p bodyProtocol) SerializeRequest(ctx context.Context, op *smithy.OperationSchema, _ smithy.Serializable, req *smithyhttp.Request) error {
	if err := p.ClientProtocol.SerializeRequest(ctx, op, &dynamodb.BatchWriteItemInput{}, req); err != nil {
		return err
	}
	sreq, err := req.SetStream(bytes.NewReader(p.body))
	if err != nil {
		return fmt.Errorf("setting the pre-encoded BatchWriteItem body: %w", err)
	}
	*req = *sreq
	return nil
}
