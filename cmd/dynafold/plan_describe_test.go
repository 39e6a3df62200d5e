package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"
)

// resets fails its first `fail` requests as a kept-alive connection the
// server had just closed does, and answers the others with a table.
type resets struct{ calls, fail atomic.Int32 }

func (r *resets) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.calls.Add(1) <= r.fail.Load() {
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	body := `{"Table":{"TableName":"t","TableStatus":"ACTIVE"}}`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// The plan describes the target twice at most: a connection reset once
// (the SDK sends a POST only once on its own) is tried again, and
// answered.
func TestPlanDescribesTheTargetAgainAfterAReset(t *testing.T) {
	rt := &resets{}
	rt.fail.Store(1)
	client := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"),
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
		HTTPClient:  &http.Client{Transport: rt},
	})
	out, err := briefTable{client}.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("t")})
	require.NoError(t, err)
	require.Equal(t, "t", aws.ToString(out.Table.TableName))
	require.EqualValues(t, 2, rt.calls.Load())

	// A target that keeps failing is reported after the second attempt.
	rt.calls.Store(0)
	rt.fail.Store(100)
	_, err = briefTable{client}.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("t")})
	require.Error(t, err)
	require.EqualValues(t, 2, rt.calls.Load())
}
