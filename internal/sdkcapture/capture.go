// Package sdkcapture runs a DynamoDB client of the AWS SDK for Go against
// an HTTP client that records request bodies and answers every call with
// an empty success, so that tests can compare what the SDK's own
// serializer writes with dynafold's encoders.
package sdkcapture

import (
	"bytes"
	"io"
	"net/http"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Recorder is an HTTP client that keeps the last request.
type Recorder struct {
	mu     sync.Mutex
	body   []byte
	header http.Header
	bodies int
	// Responses are answered in order, then "{}".
	Responses []string
}

// Do implements the SDK's HTTP client interface.
func (r *Recorder) Do(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	r.body, r.header = body, req.Header.Clone()
	r.bodies++
	resp := "{}"
	if len(r.Responses) > 0 {
		resp, r.Responses = r.Responses[0], r.Responses[1:]
	}
	r.mu.Unlock()
	return &http.Response{
		StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:          io.NopCloser(bytes.NewReader([]byte(resp))),
		ContentLength: int64(len(resp)),
		Request:       req,
	}, nil
}

// Body returns the last request body.
func (r *Recorder) Body() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body
}

// Header returns the last request's headers.
func (r *Recorder) Header() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.header
}

// Requests returns how many requests were made.
func (r *Recorder) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bodies
}

// NewClient returns a DynamoDB client that sends to r, with static
// credentials and a local endpoint (the request is signed as usual).
func NewClient(r *Recorder) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://localhost:1"),
		Credentials:  credentials.NewStaticCredentialsProvider("k", "s", ""),
		HTTPClient:   r,
		Retryer:      aws.NopRetryer{},
	})
}
