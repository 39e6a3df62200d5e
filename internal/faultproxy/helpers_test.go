package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/ddbnoop"
	"github.com/dynafold/dynafold/internal/ownbody"
)

// endpointEnv names the DynamoDB-compatible server (dynalite) that
// scripts/test.sh starts for integration tests.
const endpointEnv = "DYNAFOLD_TEST_DYNAMODB_ENDPOINT"

// dynamoEndpoint returns the test DynamoDB endpoint, skipping the test when
// none is configured, or failing it when DYNAFOLD_INTEGRATION=1 demands one.
func dynamoEndpoint(t *testing.T) string {
	t.Helper()
	ep := os.Getenv(endpointEnv)
	if ep == "" {
		if os.Getenv("DYNAFOLD_INTEGRATION") == "1" {
			t.Fatalf("%s is not set but DYNAFOLD_INTEGRATION=1 requires it (run scripts/test.sh)", endpointEnv)
		}
		t.Skipf("%s is not set; set it to a dynalite endpoint (scripts/test.sh does) to run this test", endpointEnv)
	}
	return ep
}

// newClient returns an SDK client that makes exactly one attempt per call,
// so the test sees every injected fault.
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

// startProxy starts a Proxy in front of backend and returns it with a client
// pointed at it.
func startProxy(t *testing.T, backend string, cfg Config) (*Proxy, *dynamodb.Client) {
	t.Helper()
	p, err := New(backend, cfg)
	require.NoError(t, err)
	url, stop, err := p.Start()
	require.NoError(t, err)
	t.Cleanup(stop)
	return p, newClient(url)
}

// recorder wraps a backend and records the keys of every write request it
// receives in BatchWriteItem calls, so tests can compare what the backend
// saw with what the client was told.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	keys []string
}

type wireWrite struct {
	PutRequest    *struct{ Item map[string]map[string]any }
	DeleteRequest *struct{ Key map[string]map[string]any }
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".BatchWriteItem") {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		var in struct{ RequestItems map[string][]wireWrite }
		if err := json.Unmarshal(body, &in); err == nil {
			r.mu.Lock()
			for table, reqs := range in.RequestItems {
				for _, wr := range reqs {
					item := map[string]map[string]any{}
					if wr.PutRequest != nil {
						item = wr.PutRequest.Item
					} else if wr.DeleteRequest != nil {
						item = wr.DeleteRequest.Key
					}
					r.keys = append(r.keys, fmt.Sprintf("%s/%v/%v", table, item["PK"]["S"], item["SK"]["S"]))
				}
			}
			r.mu.Unlock()
		}
	}
	r.next.ServeHTTP(w, req)
}

// take returns and clears the recorded keys, sorted.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.keys
	r.keys = nil
	sort.Strings(out)
	return out
}

var noopTables = []ddbnoop.TableSpec{{Name: "items", PK: "PK", SK: "SK"}, {Name: "other", PK: "PK", SK: "SK"}}

// startNoopBackend starts ddbnoop behind a recorder.
func startNoopBackend(t *testing.T) (*ddbnoop.Server, *recorder, string) {
	t.Helper()
	srv := ddbnoop.New(ddbnoop.Options{Tables: noopTables})
	rec := &recorder{next: srv}
	hs := httptest.NewServer(rec)
	t.Cleanup(hs.Close)
	return srv, rec, hs.URL
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// items returns n put requests with keys PK=pk, SK=sk<from..from+n>.
func items(pk string, from, n int) []types.WriteRequest {
	out := make([]types.WriteRequest, 0, n)
	for i := from; i < from+n; i++ {
		out = append(out, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			"PK":      s(pk),
			"SK":      s(fmt.Sprintf("sk%06d", i)),
			"payload": s(fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", 100))),
			"n":       &types.AttributeValueMemberN{Value: fmt.Sprint(i)},
		}}})
	}
	return out
}

// keysOf renders write requests as sorted "table/PK/SK" strings.
func keysOf(table string, reqs []types.WriteRequest) []string {
	out := make([]string, 0, len(reqs))
	for _, r := range reqs {
		item := map[string]types.AttributeValue{}
		if r.PutRequest != nil {
			item = r.PutRequest.Item
		} else if r.DeleteRequest != nil {
			item = r.DeleteRequest.Key
		}
		out = append(out, fmt.Sprintf("%s/%s/%s", table,
			item["PK"].(*types.AttributeValueMemberS).Value, item["SK"].(*types.AttributeValueMemberS).Value))
	}
	sort.Strings(out)
	return out
}

// createTable creates a uniquely named PK/SK table on a real backend, waits
// for it to be ACTIVE and deletes it when the test ends.
func createTable(t *testing.T, c *dynamodb.Client) string {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("faultproxy-%d", time.Now().UnixNano())
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange},
		},
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("SK"), AttributeType: types.ScalarAttributeTypeS},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	require.NoError(t, err)
	require.NoError(t, dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, 500*time.Millisecond
	}).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second))
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

// scanKeys reads a whole table directly from the backend.
func scanKeys(t *testing.T, c *dynamodb.Client, table string) []string {
	t.Helper()
	var keys []string
	pg := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table)})
	for pg.HasMorePages() {
		page, err := pg.NextPage(context.Background())
		require.NoError(t, err)
		for _, it := range page.Items {
			keys = append(keys, fmt.Sprintf("%s/%s/%s", table,
				it["PK"].(*types.AttributeValueMemberS).Value, it["SK"].(*types.AttributeValueMemberS).Value))
		}
	}
	sort.Strings(keys)
	return keys
}
