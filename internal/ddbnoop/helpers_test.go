package ddbnoop

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/ownbody"
)

// testTable is the table most tests write to.
var testTable = TableSpec{Name: "items", PK: "PK", SK: "SK", GSIs: []IndexSpec{{Name: "GSI1", PK: "GSI1PK", SK: "SK"}}}

// newTestServer starts a Server behind httptest and returns it with an SDK
// client that does not retry, so every server answer reaches the test.
func newTestServer(t testing.TB, opts Options) (*Server, *dynamodb.Client) {
	t.Helper()
	srv, err := NewServer(opts)
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, newClient(hs.URL)
}

func newClient(url string) *dynamodb.Client {
	return dynamodb.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
	}, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(url)
		o.RetryMaxAttempts = 1
		o.HTTPClient = ownbody.New()
	})
}

// fakeClock is a settable clock for the capacity buckets.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// itemOfSize returns an item for testTable whose DynamoDB size is exactly
// size bytes (size >= 16).
func itemOfSize(pk, sk string, size int) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{"PK": s(pk), "SK": s(sk)}
	used := 2 + len(pk) + 2 + len(sk) + len("pad")
	item["pad"] = s(strings.Repeat("x", size-used))
	return item
}

func puts(items ...map[string]types.AttributeValue) []types.WriteRequest {
	out := make([]types.WriteRequest, len(items))
	for i, it := range items {
		out[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	return out
}

// kbItems returns n items of exactly 1000 bytes (1 write unit each) with
// distinct keys under partition pk.
func kbItems(pk string, from, n int) []types.WriteRequest {
	out := make([]types.WriteRequest, 0, n)
	for i := from; i < from+n; i++ {
		out = append(out, puts(itemOfSize(pk, fmt.Sprintf("sk%05d", i), 1000))...)
	}
	return out
}

func batchWrite(ctx context.Context, c *dynamodb.Client, table string, reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error) {
	return c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
		RequestItems:           map[string][]types.WriteRequest{table: reqs},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
}

// keysOf lists the "PK/SK" keys of put requests, for comparing sets.
func keysOf(reqs []types.WriteRequest) []string {
	out := make([]string, 0, len(reqs))
	for _, r := range reqs {
		item := r.PutRequest.Item
		out = append(out, item["PK"].(*types.AttributeValueMemberS).Value+"/"+item["SK"].(*types.AttributeValueMemberS).Value)
	}
	return out
}
