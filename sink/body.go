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

// appendBatch appends pending, encoded as a BatchWriteItem request body
// for table, to dst. Items without a pre-encoded Body (deletes, items
// built outside the migrate hot path) are encoded from their attributes.
func appendBatch(dst []byte, table string, pending []*mapping.Item) []byte {
	b := append(dst, `{"RequestItems":{`...)
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

// batchSize is a guess of pending's encoded size, to take a buffer that
// holds it at once.
func batchSize(table string, pending []*mapping.Item) int {
	n := 64 + len(table)
	for _, it := range pending {
		n += 32 + len(it.Body)
		if it.Body == nil {
			n += it.Size + 16*len(it.Attrs)
		}
	}
	return n
}

// Body is one request body in a pooled buffer (a fresh 10 KB buffer per
// request was a tenth of the writer's allocations).
//
// Ownership is explicit, because a buffer recycled too early is sent as
// another writer's batch: DynamoDB accepts it (the signature covers the
// bytes sent) and the first writer acknowledges items that were never
// written. A Body has one owner, the code that encoded it (the writer's
// attempt), which holds it until every send of it has returned, retries
// of an unreachable endpoint included (ReachGuard sends one body again),
// and then calls Release once. A transport that may read the body after
// the send returned (net/http closes a request body when it is done with
// it, possibly later, from its own goroutine) reads it through an
// attempt reader (newAttempt), which holds the buffer until it is closed.
// The buffer goes back to the pool when the owner and every attempt
// reader have let go: exactly once. A reader never closed keeps its
// buffer from the pool, and the garbage collector takes it.
type Body struct {
	buf  []byte
	pool *bodyPool // nil: not pooled
	// refs counts the owner and the attempt readers not yet closed.
	refs atomic.Int32
}

// Bytes is the encoded body. Only its owner reads it, and only before
// Release.
func (b *Body) Bytes() []byte { return b.buf }

// Release is the owner's last use of the body: every send of it has
// returned. Calling it twice is a bug that would hand one buffer to two
// batches, so it panics instead.
func (b *Body) Release() { b.unref() }

func (b *Body) unref() {
	switch n := b.refs.Add(-1); {
	case n == 0:
		b.pool.put(b)
	case n < 0:
		panic("sink: a request body was released more than once")
	}
}

// newAttempt hands a transport the body for one send. The buffer is kept
// until the reader is closed (once; further closes do nothing).
func (b *Body) newAttempt() *attemptReader {
	b.refs.Add(1)
	return &attemptReader{Reader: bytes.NewReader(b.buf), body: b}
}

// attemptReader is a Body read by one send.
type attemptReader struct {
	*bytes.Reader
	body   *Body
	closed atomic.Bool
}

func (r *attemptReader) Close() error {
	if r.closed.CompareAndSwap(false, true) {
		r.body.unref()
	}
	return nil
}

// bodyPool recycles request buffers. Each writer takes its bodies from
// one (sharedBodies, or a test's own, whose hooks see each body).
type bodyPool struct {
	buffers sync.Pool
	// made and recycled, when set by a test, see every body made and
	// every body whose buffer goes back.
	made, recycled func(*Body)
}

// sharedBodies is the pool every writer uses.
var sharedBodies = &bodyPool{}

// maxRecycled: larger bodies (items of hundreds of KB) are not kept.
const maxRecycled = 256 << 10

// encode encodes pending as a request body for table, owned by the
// caller.
func (p *bodyPool) encode(table string, pending []*mapping.Item) *Body {
	n := batchSize(table, pending)
	var buf []byte
	if b, ok := p.buffers.Get().(*[]byte); ok && cap(*b) >= n {
		buf = (*b)[:0]
	} else {
		buf = make([]byte, 0, n)
	}
	body := &Body{buf: appendBatch(buf, table, pending), pool: p}
	body.refs.Store(1)
	if p.made != nil {
		p.made(body)
	}
	return body
}

// put takes back the buffer of a body nobody holds any more.
func (p *bodyPool) put(b *Body) {
	buf := b.buf
	if p == nil {
		return
	}
	if p.recycled != nil {
		p.recycled(b)
	}
	b.buf = nil
	if cap(buf) <= maxRecycled {
		buf = buf[:0]
		p.buffers.Put(&buf)
	}
}

// unpooledBody is a body no pool recycles (the probe's, tests').
func unpooledBody(table string, pending []*mapping.Item) *Body {
	b := &Body{buf: appendBatch(nil, table, pending)}
	b.refs.Store(1)
	return b
}

// withBody makes a BatchWriteItem call send body instead of serializing
// its input. The input still goes through the SDK's validation and
// endpoint parameters (the table name), and must describe the same items
// (fakes in tests read it). The caller keeps owning body: it is read
// during the call only, since smithy's HTTP handler closes the reader it
// gives net/http when the round trip returns, and reads after that get
// nothing (smithy-go transport/http: Request.Build's safe read closer).
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
