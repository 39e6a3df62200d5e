package sink

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/schemas"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// DirectSender sends BatchWriteItem requests whose body is encoded in
// advance without running the SDK's per-call middleware stack. A call
// through the client builds a stack of some thirty middlewares, each
// allocating, and that costs more per request than everything else
// dynafold does for the 25 items of the batch together (go test ./sink/
// -bench BatchWriteCall; figures in docs/performance.md).
//
// What the stack would decide is learnt from the SDK itself: the first
// request for a table is a probe through the client (its serializer with
// the pre-encoded body, its endpoint resolution, credentials and signing)
// whose HTTP client records the request instead of sending it. Every
// request after that copies the probe's URL and headers, is signed with
// the client's credentials (refreshed by the SDK's credentials cache) in
// the probe's signing scope, is sent by the client's own HTTP client, and
// has its response parsed by the client's own protocol and error type
// registry, which is how the stack parses it (typed errors,
// UnprocessedItems, ConsumedCapacity). The X-Amz-Crc32 header is checked,
// and a mismatch sends the batch again (the SDK only notices it when it
// closes the body). Signing is batchSigner's (sigv4.go), which is tested
// against the SDK's signer and takes half its time; an endpoint shape it
// does not cover is signed by the SDK's signer.
//
// Left out: the SDK's per-attempt headers (amz-sdk-invocation-id,
// amz-sdk-request), which only correlate the SDK's own retries, and its
// clock-skew correction, which would adjust the signing time after a
// signature-expired answer (such an answer stops the run instead).
type DirectSender struct {
	client *dynamodb.Client
	opts   dynamodb.Options
	signer *v4.Signer
	op     *smithy.OperationSchema
	now    func() time.Time

	mu     sync.Mutex
	probes map[string]*probe
}

// probe is what the SDK would send for one table.
type probe struct {
	url     string
	header  http.Header
	service string
	region  string
	// signer signs like the SDK's signer, faster; nil: the SDK's signer.
	signer *batchSigner
	// viaSDK: the request is not SigV4-signed (ErrViaSDK).
	viaSDK bool
}

// NewDirectSender sends through client.
func NewDirectSender(client *dynamodb.Client) *DirectSender {
	o := client.Options()
	return &DirectSender{
		client: client,
		opts:   o,
		signer: v4.NewSigner(),
		op:     smithy.NewOperationSchema(schemas.BatchWriteItem, schemas.BatchWriteItemInput, schemas.BatchWriteItemOutput),
		now:    time.Now,
		probes: map[string]*probe{},
	}
}

// errProbed ends a probe once the request is recorded.
var errProbed = errors.New("probe recorded")

// ErrViaSDK: the SDK's request for the table is not a SigV4-signed one
// (anonymous credentials, another auth scheme), which DirectSender does not
// reproduce; the caller sends through the client instead.
var ErrViaSDK = errors.New("send through the SDK client")

// errChecksum: the response body does not match its X-Amz-Crc32 header.
// The batch is sent again, as after a broken connection.
var errChecksum = errors.New("response did not match its X-Amz-Crc32 checksum")

// maxAnswerBytes bounds a BatchWriteItem answer read into memory. The
// largest one DynamoDB sends echoes a whole request as UnprocessedItems
// (a request is at most MaxBatchBytes), with its consumed capacity: twice
// that leaves room for the encoding, and bounds what a broken or hostile
// endpoint can make a writer hold.
const maxAnswerBytes = 2 * MaxBatchBytes

// errAnswerTooLarge: the response body is longer than any answer of
// DynamoDB's; the endpoint is not one, and the run stops.
var errAnswerTooLarge = fmt.Errorf("response body larger than %d MiB, more than DynamoDB answers to a BatchWriteItem", maxAnswerBytes>>20)

// errAnswerCut: the response body could not be read to its end (the
// connection broke after the headers). Which items were processed is
// unknown, so the batch is sent again, as after a checksum mismatch.
var errAnswerCut = errors.New("response body cut short")

// probeRecorder is the probe's HTTP client.
type probeRecorder struct{ req *http.Request }

func (r *probeRecorder) Do(req *http.Request) (*http.Response, error) {
	r.req = req
	return nil, errProbed
}

// Headers the SDK sets per attempt or per signature: the signer sets the
// signature's own again, the others are left out (see DirectSender).
var perRequestHeaders = []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token", "Amz-Sdk-Invocation-Id", "Amz-Sdk-Request", "Content-Length"}

// probeFor returns table's probe, making it on first use. A failure (no
// credentials, no region) is the error the SDK call itself would return.
func (s *DirectSender) probeFor(ctx context.Context, table string) (*probe, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.probes[table]; p != nil {
		return p, nil
	}
	rec := &probeRecorder{}
	_, err := s.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
		RequestItems:           map[string][]types.WriteRequest{table: {}},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}, noRetry, withBody(unpooledBody(table, nil).Bytes()), func(o *dynamodb.Options) { o.HTTPClient = rec })
	if rec.req == nil {
		if err == nil {
			err = errors.New("the SDK sent no request")
		}
		return nil, err
	}
	service, region, ok := signingScope(rec.req.Header.Get("Authorization"))
	if !ok {
		p := &probe{viaSDK: true}
		s.probes[table] = p
		return p, nil
	}
	h := rec.req.Header.Clone()
	for _, k := range perRequestHeaders {
		h.Del(k)
	}
	p := &probe{url: rec.req.URL.String(), header: h, service: service, region: region}
	if bs, ok := newBatchSigner(http.MethodPost, rec.req.URL, h, service, region); ok {
		p.signer = bs
	}
	s.probes[table] = p
	return p, nil
}

// signingScope reads the signing name and region from a SigV4
// Authorization header: "AWS4-HMAC-SHA256 Credential=KEY/DATE/REGION/SERVICE/aws4_request, …".
func signingScope(auth string) (service, region string, ok bool) {
	rest, found := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 Credential=")
	if !found {
		return "", "", false
	}
	cred, _, _ := strings.Cut(rest, ",")
	parts := strings.Split(cred, "/")
	if n := len(parts); n >= 5 && parts[n-1] == "aws4_request" {
		return parts[n-2], parts[n-3], true
	}
	return "", "", false
}

// Send sends body, a BatchWriteItem request body for table, and returns
// the parsed response, or the error the SDK would return for it. The
// caller keeps owning body, and may send it again (see Body): the
// transport reads it through an attempt reader of its own.
func (s *DirectSender) Send(ctx context.Context, table string, body *Body) (*dynamodb.BatchWriteItemOutput, error) {
	p, err := s.probeFor(ctx, table)
	if err != nil {
		return nil, err
	}
	if p.viaSDK {
		return nil, ErrViaSDK
	}
	req, err := s.request(ctx, p, body)
	if err != nil {
		return nil, opError(err)
	}
	resp, err := s.opts.HTTPClient.Do(req)
	if err != nil {
		err = &smithyhttp.RequestSendError{Err: err}
		if ctx.Err() != nil {
			err = &smithy.CanceledError{Err: ctx.Err()}
		}
		return nil, opError(err)
	}
	defer resp.Body.Close()
	out, err := s.parse(ctx, resp)
	if err != nil {
		return nil, opError(err)
	}
	return out, nil
}

// request builds and signs the HTTP request. Its body is an attempt
// reader of body, which holds the buffer until the transport closes it
// (net/http does, even on errors, possibly after Do returned).
func (s *DirectSender) request(ctx context.Context, p *probe, body *Body) (*http.Request, error) {
	buf := body.Bytes()
	creds, err := s.opts.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("retrieving AWS credentials: %w", err)
	}
	sent := body.newAttempt()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, sent)
	if err != nil {
		sent.Close()
		return nil, err
	}
	req.ContentLength = int64(len(buf))
	// Never replayed by the transport: a retry is a new request.
	req.GetBody = nil
	req.Header = p.header.Clone()
	sum := sha256.Sum256(buf)
	hash := hex.EncodeToString(sum[:])
	if p.signer != nil {
		p.signer.sign(req, creds, hash, req.ContentLength, s.now())
		return req, nil
	}
	if err := s.signer.SignHTTP(ctx, creds, req, hash, p.service, p.region, s.now().UTC()); err != nil {
		sent.Close()
		return nil, fmt.Errorf("signing BatchWriteItem: %w", err)
	}
	return req, nil
}

// parse reads resp. The common success answer is read by parseSuccess;
// every other answer by the client's protocol, as the SDK's
// deserialization middleware does, with a failure wrapped as its
// ResponseErrorWrapper does (status code and request ID).
func (s *DirectSender) parse(ctx context.Context, resp *http.Response) (*dynamodb.BatchWriteItemOutput, error) {
	want, check, err := crc32Header(resp.Header)
	if err != nil {
		return nil, &smithy.DeserializationError{Err: err}
	}
	// The whole answer is read, which also gives the connection back to
	// the pool; the SDK's decoder reads it whole too.
	buf := answerBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, maxAnswerBytes+1)); err != nil {
		answerBuffers.Put(buf)
		return nil, &smithy.DeserializationError{Err: fmt.Errorf("%w: %w", errAnswerCut, err)}
	}
	if buf.Len() > maxAnswerBytes {
		// Not recycled: too large to keep.
		return nil, &smithy.DeserializationError{Err: errAnswerTooLarge}
	}
	body := buf.Bytes()
	if check && crc32.ChecksumIEEE(body) != want {
		err = fmt.Errorf("%w (%d, computed %d)", errChecksum, want, crc32.ChecksumIEEE(body))
		answerBuffers.Put(buf)
		return nil, &smithy.DeserializationError{Err: err}
	}
	if resp.StatusCode == http.StatusOK {
		if out, ok := parseSuccess(body); ok {
			if buf.Cap() <= maxKeptAnswer {
				answerBuffers.Put(buf)
			}
			return out, nil
		}
	}
	// The buffer is not recycled: the SDK's output may point into it.
	raw := resp.Body
	resp.Body = io.NopCloser(bytes.NewReader(body))
	out := &dynamodb.BatchWriteItemOutput{}
	err = s.opts.Protocol.DeserializeResponse(ctx, s.op, dynamodb.TypeRegistry, &smithyhttp.Response{Response: resp}, out)
	resp.Body = raw
	if err != nil {
		return nil, &awshttp.ResponseError{
			ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp}, Err: err},
			RequestID:     resp.Header.Get("X-Amzn-Requestid"),
		}
	}
	return out, nil
}

// answerBuffers holds response bodies while they are parsed; one larger
// than maxKeptAnswer (UnprocessedItems echoing a large batch) is dropped.
// A buffer goes back only after parseSuccess, which copies what it keeps
// (table names, numbers); an answer the SDK's decoder reads keeps its
// buffer, since the output may point into it. Nothing retries a parse.
var answerBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxKeptAnswer = 64 << 10

// crc32Header reads DynamoDB's X-Amz-Crc32 response header.
func crc32Header(h http.Header) (uint32, bool, error) {
	v := h.Get("X-Amz-Crc32")
	if v == "" {
		return 0, false, nil
	}
	c, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, false, fmt.Errorf("unable to parse checksum header %v, %w", v, err)
	}
	return uint32(c), true, nil
}

// opError wraps err as the SDK's client does every operation's error.
func opError(err error) error {
	return &smithy.OperationError{ServiceID: dynamodb.ServiceID, OperationName: "BatchWriteItem", Err: err}
}
