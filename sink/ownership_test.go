package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/ddbjson"
	"github.com/dynafold/dynafold/mapping"
)

// The tests here hold the writer to the ownership rule of Body: a body is
// sent as it was encoded, however often it is sent again, and goes back
// to its pool exactly once.

// A fault is what the recording endpoint does with one request or one
// connection attempt.
type fault byte

const (
	answerOK          fault = iota // write every item, answer success
	answerUnprocessed              // write all but the last few, return those
	answerServerError              // write nothing, 500
	answerThrottled                // write nothing, 400 throttling
	answerDropped                  // write everything, then break the connection
	answerBadChecksum              // write everything, answer with a wrong X-Amz-Crc32
	faultKinds
)

// recordingEndpoint is a DynamoDB stand-in that keeps, per item key, the
// exact bytes of the item it last wrote, and misbehaves as its script
// says: each request and each connection attempt takes the script's next
// byte (a connection attempt is refused when that byte is odd).
type recordingEndpoint struct {
	t   testing.TB
	srv *httptest.Server

	mu     sync.Mutex
	script []byte
	next   int
	table  map[string][]byte // key → the item's JSON as received
	bad    []string          // requests that were not a valid batch
}

func newRecordingEndpoint(t testing.TB, script []byte) *recordingEndpoint {
	e := &recordingEndpoint{t: t, script: script, table: map[string][]byte{}}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	return e
}

// step is the script's next byte (0 once it has run out: all well).
func (e *recordingEndpoint) step() byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.next >= len(e.script) {
		return 0
	}
	e.next++
	return e.script[e.next-1]
}

// dial refuses a connection as an endpoint that is down does, when the
// script says so.
func (e *recordingEndpoint) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if e.step()%2 == 1 {
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// client is a DynamoDB client of the endpoint, with real credentials, as
// the CLI builds it for the writer (the writer's guard retries dials).
func (e *recordingEndpoint) client() *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(e.srv.URL), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
		HTTPClient:  &http.Client{Transport: &http.Transport{DialContext: e.dial, MaxIdleConnsPerHost: 4}},
	})
}

type wireBatch struct {
	RequestItems map[string][]struct {
		PutRequest *struct {
			Item json.RawMessage
		}
	}
}

func (e *recordingEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var batch wireBatch
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &batch); err == nil {
		for _, req := range batch.RequestItems["t"] {
			if req.PutRequest != nil {
				items = append(items, req.PutRequest.Item)
			}
		}
	}
	if len(items) == 0 {
		e.mu.Lock()
		e.bad = append(e.bad, string(raw))
		e.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"com.amazon.coral.service#SerializationException"}`)
		return
	}
	f := fault(e.step() % byte(faultKinds))
	write := items
	var left []json.RawMessage
	switch f {
	case answerServerError, answerThrottled:
		write = nil
	case answerUnprocessed:
		k := 1 + len(items)/3
		write, left = items[:len(items)-k], items[len(items)-k:]
	}
	e.mu.Lock()
	for _, it := range write {
		e.table[wireKey(e.t, it)] = bytes.Clone(it)
	}
	e.mu.Unlock()
	answer := []byte(`{}`)
	switch f {
	case answerServerError:
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"try again"}`)
		return
	case answerThrottled:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow down"}`)
		return
	case answerDropped:
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = c.Close()
		}
		return
	case answerUnprocessed:
		answer = []byte(`{"UnprocessedItems":{"t":[`)
		for i, it := range left {
			if i > 0 {
				answer = append(answer, ',')
			}
			answer = append(answer, `{"PutRequest":{"Item":`...)
			answer = append(answer, it...)
			answer = append(answer, "}}"...)
		}
		answer = append(answer, "]}}"...)
	}
	sum := crc32.ChecksumIEEE(answer)
	if f == answerBadChecksum {
		sum++
	}
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(sum), 10))
	_, _ = w.Write(answer)
}

// wireKey is the PK of an item as the endpoint received it.
func wireKey(t testing.TB, item json.RawMessage) string {
	var attrs struct{ PK struct{ S string } }
	if err := json.Unmarshal(item, &attrs); err != nil {
		t.Errorf("an item the endpoint received is not JSON: %v: %s", err, item)
	}
	return attrs.PK.S
}

// ownedItems is a batch of n items named name#i, each encoded once as the
// builder does, with a text of fixed width so that every batch of n items
// has the same length.
func ownedItems(name string, n int) []*mapping.Item {
	items := make([]*mapping.Item, n)
	for i := range items {
		attrs := map[string]types.AttributeValue{
			"PK":      &types.AttributeValueMemberS{Value: fmt.Sprintf("%s#%04d", name, i)},
			"payload": &types.AttributeValueMemberS{Value: fmt.Sprintf("%s-%04d-payload", name, i)},
		}
		key, _ := mapping.ItemKey(attrs, "PK", "")
		items[i] = &mapping.Item{Key: key, Attrs: attrs, Size: mapping.ItemSize(attrs), Body: ddbjson.AppendItem(nil, attrs)}
	}
	return items
}

var ownedSchema = &mapping.TableSchema{Name: "t", PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}}

// ackRecorder keeps every acknowledged item.
type ackRecorder struct {
	mu    sync.Mutex
	acked []*mapping.Item
}

func (r *ackRecorder) Acked(items []*mapping.Item) {
	r.mu.Lock()
	r.acked = append(r.acked, items...)
	r.mu.Unlock()
}
func (r *ackRecorder) Rejected(*mapping.Item, error) {}
func (r *ackRecorder) Retried([]*mapping.Item, bool) {}

// requireAckedArrived: every item the writer acknowledged is in the
// endpoint's table, byte for byte as it was encoded.
func requireAckedArrived(t testing.TB, e *recordingEndpoint, res *ackRecorder) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	require.Empty(t, e.bad, "requests that were not the batch their writer encoded")
	res.mu.Lock()
	defer res.mu.Unlock()
	for _, it := range res.acked {
		key := it.Attrs["PK"].(*types.AttributeValueMemberS).Value
		got, ok := e.table[key]
		require.True(t, ok, "item %s was acknowledged but never written", key)
		require.Equal(t, string(it.Body), string(got), "item %s was acknowledged but written otherwise", key)
	}
}

// countingPool is a body pool that counts, per body, how often it was
// made and recycled.
type countingPool struct {
	*bodyPool
	mu                sync.Mutex
	made, recycled    int
	times             map[*Body]int
	lastRecycledBytes []byte
}

func newCountingPool() *countingPool {
	c := &countingPool{times: map[*Body]int{}}
	c.bodyPool = &bodyPool{
		made: func(b *Body) {
			c.mu.Lock()
			c.made++
			c.times[b] = 0
			c.mu.Unlock()
		},
		recycled: func(b *Body) {
			c.mu.Lock()
			c.recycled++
			c.times[b]++
			c.lastRecycledBytes = b.Bytes()
			c.mu.Unlock()
		},
	}
	return c
}

// requireEachRecycledOnce waits for the transports to close the bodies
// they hold (net/http may close one after the round trip returned), then
// requires every body made to have been recycled exactly once.
func (c *countingPool) requireEachRecycledOnce(t testing.TB) {
	t.Helper()
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.recycled >= c.made
	}, 10*time.Second, 5*time.Millisecond, "bodies never given back")
	c.mu.Lock()
	defer c.mu.Unlock()
	for b, n := range c.times {
		require.Equal(t, 1, n, "body %p recycled %d times", b, n)
	}
	require.Equal(t, c.made, c.recycled)
}

// guardedWriter is a writer as the CLI builds it (a ReachGuard over a
// DirectSender, over a real client) with no waiting: the guard's and the
// writer's sleeps are replaced by wait.
func guardedWriter(e *recordingEndpoint, pool *bodyPool, attempts int, wait func(context.Context, time.Duration) error) *DynamoWriter {
	client := e.client()
	retryer := awsretry.NewStandard(func(o *awsretry.StandardOptions) { o.MaxAttempts = attempts })
	guard := &ReachGuard{api: client, direct: NewDirectSender(client), retryer: retryer, endpoint: e.srv.URL, sleep: wait}
	w := NewDynamoWriter(guard, ownedSchema, WriterOptions{MaxAttempts: attempts, Sleep: wait})
	w.bodies = pool
	return w
}

// TestGuardResendsTheBodyItOwns: the endpoint refuses the first
// connection; while the guard waits for it, another writer encodes a
// batch of the same length into whatever buffer went back to the pool.
// The guard's second send must still carry the first writer's batch: a
// body is recycled only after its last send. (Before bodies had an owner,
// the sender recycled the buffer when its first send failed, the other
// writer's batch went out instead, and the first writer acknowledged
// items that were never written.)
func TestGuardResendsTheBodyItOwns(t *testing.T) {
	e := newRecordingEndpoint(t, []byte{1}) // the first dial is refused
	pool := newCountingPool()
	other := appendBatch(nil, "t", ownedItems("OTHR", 5))
	waits := 0
	w := guardedWriter(e, pool.bodyPool, 4, func(context.Context, time.Duration) error {
		waits++
		pool.mu.Lock()
		defer pool.mu.Unlock()
		// Another writer takes the buffer recycled last and encodes
		// its own batch into it.
		if buf := pool.lastRecycledBytes; buf != nil && len(buf) == len(other) {
			copy(buf, other)
		}
		return nil
	})
	mine := ownedItems("MINE", 5)
	res := &ackRecorder{}
	require.NoError(t, w.Write(context.Background(), mine, res))
	require.Equal(t, 1, waits, "the guard waited for the endpoint once")
	require.Len(t, res.acked, len(mine))
	requireAckedArrived(t, e, res)
	e.mu.Lock()
	require.Len(t, e.table, len(mine), "nothing but the writer's own batch was written")
	e.mu.Unlock()
	pool.requireEachRecycledOnce(t)
}

// runFaultyWriters has writers write batches each through one guard, one
// pool and one endpoint misbehaving as script says; the guard's waits
// have another writer encode and drop a body meanwhile. It returns what
// was acknowledged.
func runFaultyWriters(t testing.TB, e *recordingEndpoint, pool *countingPool, writers, batches int) *ackRecorder {
	t.Helper()
	filler := ownedItems("FILL", MaxBatchItems)
	wait := func(ctx context.Context, _ time.Duration) error {
		pool.encode("t", filler).Release()
		return ctx.Err()
	}
	w := guardedWriter(e, pool.bodyPool, 6, wait)
	res := &ackRecorder{}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				// Errors are allowed (the script may exhaust the
				// attempts); acknowledgements must be true. A guard
				// that gave up is rearmed, as sync does.
				if err := w.Write(context.Background(), ownedItems(fmt.Sprintf("W%02dB%03d", i, b), 1+(i+b)%MaxBatchItems), res); err != nil {
					w.Rearm()
				}
			}
		}()
	}
	wg.Wait()
	return res
}

// TestBodiesAreRecycledExactlyOnce: many writers through one guard and
// one pool, with refused connections, broken connections, throttling,
// server errors, unprocessed items and bad checksums: every acknowledged
// item arrived as encoded, and every body went back to the pool once.
// scripts/test.sh runs the sink package under the race detector.
func TestBodiesAreRecycledExactlyOnce(t *testing.T) {
	script := make([]byte, 4000)
	for i := range script {
		script[i] = byte(i*7919>>3) ^ byte(i)
	}
	e := newRecordingEndpoint(t, script)
	pool := newCountingPool()
	res := runFaultyWriters(t, e, pool, 16, 12)
	require.NotEmpty(t, res.acked)
	requireAckedArrived(t, e, res)
	pool.requireEachRecycledOnce(t)
	pool.mu.Lock()
	defer pool.mu.Unlock()
	require.Greater(t, pool.made, 16*12, "faults made the writers send bodies again")
}

// FuzzWritersAckOnlyWhatArrived interleaves the sends, failures and
// retries of several writers as the input says: its first byte is the
// number of writers, the rest the endpoint's script of faults. Every
// acknowledged item must have been received exactly as encoded, and every
// body recycled once.
func FuzzWritersAckOnlyWhatArrived(f *testing.F) {
	f.Add([]byte{4, 1, 0, 1, 1, 4, 0, 2, 1, 3, 5, 0})
	f.Add([]byte{8, 1, 1, 1, 0, 0, 4, 4, 1, 0, 6, 2})
	f.Add([]byte{1, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		writers := 1 + int(data[0])%8
		e := newRecordingEndpoint(t, data[1:])
		pool := newCountingPool()
		res := runFaultyWriters(t, e, pool, writers, 3)
		requireAckedArrived(t, e, res)
		pool.requireEachRecycledOnce(t)
	})
}
