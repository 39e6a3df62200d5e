package sink

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/connerr"
	"github.com/dynafold/dynafold/mapping"
)

// requestRecorder keeps every request an SDK client or DirectSender sends
// and answers with an empty success.
type requestRecorder struct {
	mu   sync.Mutex
	reqs []*http.Request
	body [][]byte
}

func (r *requestRecorder) Do(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	_ = req.Body.Close()
	r.mu.Lock()
	r.reqs, r.body = append(r.reqs, req), append(r.body, b)
	r.mu.Unlock()
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(io.LimitReader(nil, 0)), Request: req}, nil
}

// withoutPerAttemptHeaders removes the SDK middlewares that add the
// per-attempt headers DirectSender leaves out, so that both sign the
// same headers.
func withoutPerAttemptHeaders(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		if _, err := s.Build.Remove("ClientRequestID"); err != nil {
			return err
		}
		// The retry middleware sets amz-sdk-request (the calls here
		// have no retryer anyway).
		_, err := s.Finalize.Remove("Retry")
		return err
	})
}

// TestDirectSignsAsTheSDK: for the same body and signing time, the
// request DirectSender sends is the SDK's own, signature included: same
// URL, same headers (Authorization among them), same body.
func TestDirectSignsAsTheSDK(t *testing.T) {
	for name, creds := range map[string]aws.CredentialsProvider{
		"static":        credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""),
		"session token": credentials.NewStaticCredentialsProvider("ASIAEXAMPLE", "secret", "the-session-token"),
	} {
		t.Run(name, func(t *testing.T) {
			rec := &requestRecorder{}
			client := dynamodb.New(dynamodb.Options{Region: "eu-west-3", Credentials: creds, HTTPClient: rec, Retryer: aws.NopRetryer{}}, withoutPerAttemptHeaders)
			batch := benchBatch()
			body := appendBatch(nil, "orders", batch)
			_, err := client.BatchWriteItem(context.Background(), batchInput("orders", batch), noRetry, withBody(body))
			require.NoError(t, err)
			sdk := rec.reqs[0]
			signedAt, err := time.Parse("20060102T150405Z", sdk.Header.Get("X-Amz-Date"))
			require.NoError(t, err)

			d := NewDirectSender(client)
			d.now = func() time.Time { return signedAt }
			_, err = d.Send(context.Background(), "orders", unpooledBody("orders", batch))
			require.NoError(t, err)
			direct := rec.reqs[len(rec.reqs)-1]

			require.Equal(t, "https://dynamodb.eu-west-3.amazonaws.com/", direct.URL.String())
			require.Equal(t, sdk.URL.String(), direct.URL.String())
			require.Equal(t, sdk.Method, direct.Method)
			require.Equal(t, sdk.Header, direct.Header)
			require.Equal(t, wireHost(sdk), wireHost(direct))
			require.Contains(t, direct.Header.Get("Authorization"), "/eu-west-3/dynamodb/aws4_request")
			require.Equal(t, rec.body[0], rec.body[len(rec.body)-1])
			require.EqualValues(t, len(body), direct.ContentLength)
		})
	}
}

// wireHost is the Host header net/http sends for req.
func wireHost(req *http.Request) string {
	if req.Host != "" {
		return req.Host
	}
	return req.URL.Host
}

// TestDirectParsesAsTheSDK: every kind of answer DynamoDB gives is read
// by DirectSender as the SDK reads it: the same output, or an error with
// the same message and the same class for the writer.
func TestDirectParsesAsTheSDK(t *testing.T) {
	answers := map[string]struct {
		status int
		header map[string]string
		body   string
	}{
		"success":                {200, nil, `{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":25}],"UnprocessedItems":{}}`},
		"unprocessed":            {200, nil, `{"UnprocessedItems":{"t":[{"PutRequest":{"Item":{"PK":{"S":"b"},"n":{"N":"1"}}}},{"DeleteRequest":{"Key":{"PK":{"S":"c"}}}}]}}`},
		"throttled":              {400, nil, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}`},
		"throttled, header only": {400, map[string]string{"X-Amzn-ErrorType": "ThrottlingException:http://internal.amazon.com/"}, `{}`},
		"request limit":          {400, nil, `{"__type":"com.amazonaws.dynamodb.v20120810#RequestLimitExceeded","message":"Throughput exceeds the current throughput limit for your account."}`},
		"invalid item":           {400, nil, `{"__type":"com.amazon.coral.validate#ValidationException","message":"One or more parameter values were invalid: Missing the key PK in the item"}`},
		"no table":               {400, nil, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}`},
		"server error":           {500, nil, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error"}`},
		"load balancer":          {503, nil, `<html>Service Unavailable</html>`},
		"access denied":          {400, nil, `{"__type":"com.amazon.coral.service#AccessDeniedException","Message":"User is not authorized"}`},
	}
	for name, a := range answers {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("X-Amzn-Requestid", "REQ123")
				w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(a.body))), 10))
				for k, v := range a.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(a.status)
				_, _ = io.WriteString(w, a.body)
			}))
			defer srv.Close()
			client := localClient(srv.URL)
			batch := benchBatch()[:3]
			want, wantErr := client.BatchWriteItem(context.Background(), batchInput("t", batch), noRetry, withBody(appendBatch(nil, "t", batch)))
			got, gotErr := NewDirectSender(client).Send(context.Background(), "t", unpooledBody("t", batch))
			if wantErr != nil {
				require.Error(t, gotErr)
				require.Equal(t, wantErr.Error(), gotErr.Error())
				require.Equal(t, classify(wantErr), classify(gotErr))
				return
			}
			require.NoError(t, gotErr)
			require.Equal(t, want.UnprocessedItems, got.UnprocessedItems)
			require.Equal(t, want.ConsumedCapacity, got.ConsumedCapacity)
		})
	}
}

func localClient(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
	})
}

// TestDirectChecksumMismatchIsSentAgain: a response that does not match
// its X-Amz-Crc32 is not trusted (which items were processed is unknown);
// the writer sends the batch again.
func TestDirectChecksumMismatchIsSentAgain(t *testing.T) {
	requireBadFirstAnswerSentAgain(t, errChecksum, func(w http.ResponseWriter, body string) {
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))+1), 10))
		_, _ = io.WriteString(w, body)
	})
}

// TestDirectCutAnswerIsSentAgain: an answer whose body breaks off after
// the headers says nothing about which items were processed; the writer
// sends the batch again.
func TestDirectCutAnswerIsSentAgain(t *testing.T) {
	requireBadFirstAnswerSentAgain(t, errAnswerCut, func(w http.ResponseWriter, body string) {
		// Promise more than is sent, then drop the connection.
		w.Header().Set("Content-Length", strconv.Itoa(len(body)+10))
		_, _ = io.WriteString(w, body)
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			_ = conn.Close()
		}
	})
}

// requireBadFirstAnswerSentAgain: a server whose first answer to each
// client is spoiled by bad fails a send with want, a transient error, and
// a writer sends the batch again and acknowledges every item.
func requireBadFirstAnswerSentAgain(t *testing.T, want error, bad func(w http.ResponseWriter, body string)) {
	t.Helper()
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls++
		body := `{"UnprocessedItems":{}}`
		if calls == 1 {
			bad(w, body)
			return
		}
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	_, err := NewDirectSender(localClient(srv.URL)).Send(context.Background(), "t", unpooledBody("t", benchBatch()))
	require.ErrorIs(t, err, want)
	require.Equal(t, classTransient, classify(err))

	w := NewDynamoWriter(NewReachGuard(localClient(srv.URL)), &mapping.TableSchema{Name: "t", PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}},
		WriterOptions{Sleep: func(context.Context, time.Duration) error { return nil }})
	calls = 0
	res := &countingResults{}
	require.NoError(t, w.Write(context.Background(), benchBatch(), res))
	require.Equal(t, MaxBatchItems, res.acked)
	require.Equal(t, 2, calls)
	require.EqualValues(t, 1, w.Stats().Retried)
}

// TestDirectUnreachable: a refused connection is a dial error, as the
// ReachGuard needs to wait for the endpoint.
func TestDirectUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	_, err = NewDirectSender(localClient("http://"+addr)).Send(context.Background(), "t", unpooledBody("t", benchBatch()))
	require.Error(t, err)
	require.True(t, connerr.Dial(err), "%v", err)
	require.Equal(t, classTransient, classify(err))
}

// TestDirectProbeFailureIsTheSDKs: when the SDK cannot make the request
// at all (here, no region), the write fails with the SDK's own error.
func TestDirectProbeFailureIsTheSDKs(t *testing.T) {
	client := dynamodb.New(dynamodb.Options{Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""), Retryer: aws.NopRetryer{}})
	_, want := client.BatchWriteItem(context.Background(), batchInput("t", nil), noRetry)
	_, got := NewDirectSender(client).Send(context.Background(), "t", unpooledBody("t", nil))
	require.Error(t, want)
	require.Error(t, got)
	require.Equal(t, want.Error(), got.Error())
	require.Equal(t, classFatal, classify(got))
}

// TestDirectRecyclesBodies: request bodies go back to the pool only once
// the transport is done with them, so concurrent requests through real
// connections all arrive intact.
func TestDirectRecyclesBodies(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[string(b)]++
		mu.Unlock()
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	d := NewDirectSender(localClient(srv.URL))
	// One batch, encoded once (map order is random), with a first item
	// that differs per request.
	base := benchBatch()
	one := func(w, i int) []*mapping.Item {
		batch := append([]*mapping.Item{{Body: fmt.Appendf(nil, `{"PK":{"S":"w%di%d"}}`, w, i)}}, base[1:]...)
		return batch
	}
	want := map[string]int{}
	for w := range 8 {
		for i := range 50 {
			want[string(appendBatch(nil, "t", one(w, i)))]++
		}
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				body := sharedBodies.encode("t", one(w, i))
				_, err := d.Send(context.Background(), "t", body)
				body.Release()
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, want, seen)
}

// TestDirectLeavesUnsignedRequestsToTheSDK: with anonymous credentials the
// SDK sends the request unsigned; the writer then sends through the
// client, and the batch still arrives.
func TestDirectLeavesUnsignedRequestsToTheSDK(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: aws.AnonymousCredentials{}, Retryer: aws.NopRetryer{}})
	_, err := NewDirectSender(client).Send(context.Background(), "t", unpooledBody("t", benchBatch()))
	require.ErrorIs(t, err, ErrViaSDK)

	w := NewDynamoWriter(NewReachGuard(client), &mapping.TableSchema{Name: "t", PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}}, WriterOptions{})
	res := &countingResults{}
	require.NoError(t, w.Write(context.Background(), benchBatch(), res))
	require.Equal(t, MaxBatchItems, res.acked)
	require.Equal(t, []string{""}, auth)
}

// closeLater wraps the transport as a RoundTripper that reads the body
// late might: the transport gets the body with its Close held back, and
// the wrapper closes it only some time after the round trip returned. It
// notes, per body (by content), when that close happened.
type closeLater struct {
	next   http.RoundTripper
	seq    *atomic.Int64
	mu     sync.Mutex
	closed map[string]int64
}

type heldBody struct {
	io.ReadCloser
	read bytes.Buffer
	// done is closed when the transport closes the body: it has read
	// all it will (it may do so after RoundTrip returned).
	done chan struct{}
	once sync.Once
}

func (h *heldBody) Read(p []byte) (int, error) {
	n, err := h.ReadCloser.Read(p)
	h.read.Write(p[:n])
	return n, err
}

func (h *heldBody) Close() error {
	h.once.Do(func() { close(h.done) })
	return nil
}

func (c *closeLater) RoundTrip(req *http.Request) (*http.Response, error) {
	orig := req.Body
	held := &heldBody{ReadCloser: orig, done: make(chan struct{})}
	inner := req.Clone(req.Context())
	inner.Body = held
	resp, err := c.next.RoundTrip(inner)
	go func() {
		<-held.done
		time.Sleep(3 * time.Millisecond)
		c.mu.Lock()
		c.closed[held.read.String()] = c.seq.Add(1)
		c.mu.Unlock()
		orig.Close()
	}()
	return resp, err
}

// TestDirectKeepsBodiesUntilClosed: a request body's buffer goes back to
// the pool only once its owner released it and the transport closed it,
// however late a wrapping RoundTripper closes it.
func TestDirectKeepsBodiesUntilClosed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	seq := &atomic.Int64{}
	late := &closeLater{next: http.DefaultTransport, seq: seq, closed: map[string]int64{}}
	var mu sync.Mutex
	recycled := map[string]int64{}
	bodies := &bodyPool{recycled: func(b *Body) {
		mu.Lock()
		recycled[string(b.Bytes())] = seq.Add(1)
		mu.Unlock()
	}}
	client := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
		HTTPClient:  &http.Client{Transport: late},
	})
	d := NewDirectSender(client)
	base := benchBatch()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				batch := append([]*mapping.Item{{Body: fmt.Appendf(nil, `{"PK":{"S":"w%di%d"}}`, w, i)}}, base[1:]...)
				body := bodies.encode("t", batch)
				_, err := d.Send(context.Background(), "t", body)
				body.Release()
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		late.mu.Lock()
		defer late.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		return len(late.closed) == 100 && len(recycled) >= 100
	}, 5*time.Second, 10*time.Millisecond)
	for body, closedAt := range late.closed {
		at, ok := recycled[body]
		require.True(t, ok, "a closed body was never recycled")
		require.Greater(t, at, closedAt, "a body was recycled before the RoundTripper closed it")
	}
}

// TestDirectAnswerIsReadUpToACap: an endpoint that answers with more than
// any DynamoDB answer (here an endless body) makes the write fail, fatally
// and after reading at most the cap, instead of filling the writer's
// memory.
func TestDirectAnswerIsReadUpToACap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		chunk := bytes.Repeat([]byte(" "), 1<<20)
		for range 4 * maxAnswerBytes >> 20 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	w := NewDynamoWriter(NewReachGuard(localClient(srv.URL)), &mapping.TableSchema{Name: "t", PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}},
		WriterOptions{Sleep: func(context.Context, time.Duration) error { return nil }})
	err := w.Write(context.Background(), benchBatch(), &countingResults{})
	require.ErrorIs(t, err, errAnswerTooLarge)
	require.Equal(t, classFatal, classify(err))
	require.Contains(t, err.Error(), "larger than 32 MiB")
	require.EqualValues(t, 1, w.Stats().Requests, "not sent again")
}
