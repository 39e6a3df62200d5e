package faultproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(c *dynamodb.Client, table string, reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error) {
	return c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
		RequestItems:           map[string][]types.WriteRequest{table: reqs},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
}

func httpStatus(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// requireRetryable checks that the SDK's standard retryer would retry err,
// which is what lets dynafold survive the fault.
func requireRetryable(t *testing.T, err error) {
	t.Helper()
	assert.True(t, retry.NewStandard().IsErrorRetryable(err), "not retryable: %v", err)
}

func TestInjectedErrorsReachSDK(t *testing.T) {
	t.Run("throttle", func(t *testing.T) {
		noop, _, backend := startNoopBackend(t)
		p, c := startProxy(t, backend, Config{Throttle: 1})
		_, err := write(c, "items", items("p", 0, 5))
		var ptee *types.ProvisionedThroughputExceededException
		require.ErrorAs(t, err, &ptee)
		assert.Equal(t, 400, httpStatus(err))
		requireRetryable(t, err)
		assert.Zero(t, noop.Stats().Requests, "a throttled request must not be forwarded")
		assert.EqualValues(t, 1, p.Stats().Throttle)
	})
	t.Run("throttling", func(t *testing.T) {
		noop, _, backend := startNoopBackend(t)
		p, c := startProxy(t, backend, Config{Throttling: 1})
		_, err := write(c, "items", items("p", 0, 5))
		var te *types.ThrottlingException
		require.ErrorAs(t, err, &te)
		requireRetryable(t, err)
		assert.Zero(t, noop.Stats().Requests)
		assert.EqualValues(t, 1, p.Stats().Throttling)
	})
	t.Run("error5xx alternates 500 and 503", func(t *testing.T) {
		noop, _, backend := startNoopBackend(t)
		p, c := startProxy(t, backend, Config{Error5xx: 1})
		_, err := write(c, "items", items("p", 0, 5))
		var ise *types.InternalServerError
		require.ErrorAs(t, err, &ise)
		assert.Equal(t, 500, httpStatus(err))
		requireRetryable(t, err)

		_, err = write(c, "items", items("p", 0, 5))
		var apiErr smithy.APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, "ServiceUnavailable", apiErr.ErrorCode())
		assert.Equal(t, 503, httpStatus(err))
		requireRetryable(t, err)
		assert.Zero(t, noop.Stats().Requests)
		st := p.Stats()
		assert.EqualValues(t, 1, st.Error500)
		assert.EqualValues(t, 1, st.Error503)
	})
	t.Run("reset before forwarding", func(t *testing.T) {
		noop, _, backend := startNoopBackend(t)
		p, c := startProxy(t, backend, Config{Reset: 1})
		_, err := write(c, "items", items("p", 0, 5))
		require.Error(t, err)
		var apiErr smithy.APIError
		assert.False(t, errors.As(err, &apiErr), "a reset is a transport error, got %v", err)
		t.Logf("SDK error for a reset: %v", err)
		requireRetryable(t, err)
		assert.Zero(t, noop.Stats().Requests)
		assert.EqualValues(t, 1, p.Stats().Reset)
	})
	t.Run("reset after forwarding", func(t *testing.T) {
		noop, rec, backend := startNoopBackend(t)
		p, c := startProxy(t, backend, Config{ResetAfter: 1})
		reqs := items("p", 0, 5)
		_, err := write(c, "items", reqs)
		require.Error(t, err)
		requireRetryable(t, err)
		// ...yet the write was applied.
		assert.EqualValues(t, 5, noop.Stats().Items)
		assert.Equal(t, keysOf("items", reqs), rec.take())
		assert.EqualValues(t, 1, p.Stats().ResetAfter)
	})
}

func TestOperationFilter(t *testing.T) {
	_, _, backend := startNoopBackend(t)
	ctx := context.Background()
	desc := &dynamodb.DescribeTableInput{TableName: aws.String("items")}

	// Default: only BatchWriteItem is faulted.
	p, c := startProxy(t, backend, Config{Throttle: 1})
	_, err := c.DescribeTable(ctx, desc)
	require.NoError(t, err)
	st := p.Stats()
	assert.EqualValues(t, 1, st.Requests)
	assert.EqualValues(t, 0, st.Eligible)
	assert.EqualValues(t, 1, st.Forwarded)

	p, c = startProxy(t, backend, Config{Throttle: 1, Ops: []string{"*"}})
	_, err = c.DescribeTable(ctx, desc)
	var ptee *types.ProvisionedThroughputExceededException
	require.ErrorAs(t, err, &ptee)

	p, c = startProxy(t, backend, Config{Throttle: 1, Ops: []string{"DescribeTable"}})
	_, err = c.DescribeTable(ctx, desc)
	require.ErrorAs(t, err, &ptee)
	_, err = write(c, "items", items("p", 0, 1))
	require.NoError(t, err)
	assert.EqualValues(t, 1, p.Stats().Throttle)

	// Partial is meaningless outside BatchWriteItem: such requests pass.
	p, c = startProxy(t, backend, Config{Partial: 1, Ops: []string{"*"}})
	_, err = c.DescribeTable(ctx, desc)
	require.NoError(t, err)
	assert.EqualValues(t, 0, p.Stats().Partial)
}

func TestPartialRewriteAgainstNoop(t *testing.T) {
	noop, rec, backend := startNoopBackend(t)
	p, c := startProxy(t, backend, Config{Partial: 1, Seed: 7})
	rng := rand.New(rand.NewPCG(1, 2))
	totalHeld, totalProcessed := 0, 0
	for round := range 60 {
		// Batches of 2..25 requests split over one or two tables.
		n := 2 + rng.IntN(24)
		nOther := 0
		if round%3 == 0 {
			nOther = rng.IntN(n)
		}
		sent := map[string][]types.WriteRequest{"items": items("p", round*100, n-nOther)}
		if nOther > 0 {
			sent["other"] = items("q", round*100, nOther)
		}
		if len(sent["items"]) == 0 {
			delete(sent, "items")
		}
		out, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
			RequestItems: sent, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		require.NoError(t, err)

		var sentKeys, unprocessed []string
		for table, reqs := range sent {
			sentKeys = append(sentKeys, keysOf(table, reqs)...)
			unprocessed = append(unprocessed, keysOf(table, out.UnprocessedItems[table])...)
		}
		seen := rec.take()
		// The backend saw exactly the processed requests...
		processed := difference(sentKeys, unprocessed)
		assert.ElementsMatch(t, processed, seen, "round %d", round)
		// ...which are a non-empty strict subset, and unprocessed + processed
		// is exactly what was sent, with nothing duplicated.
		assert.NotEmpty(t, seen)
		assert.NotEmpty(t, unprocessed)
		assert.ElementsMatch(t, sentKeys, append(append([]string{}, seen...), unprocessed...))
		// The backend's ConsumedCapacity is relayed: one unit per processed item.
		var units float64
		for _, cc := range out.ConsumedCapacity {
			units += aws.ToFloat64(cc.CapacityUnits)
		}
		assert.Equal(t, float64(len(seen)), units)
		totalHeld += len(unprocessed)
		totalProcessed += len(seen)
	}
	st := p.Stats()
	assert.EqualValues(t, 60, st.Partial)
	assert.EqualValues(t, totalHeld, st.PartialHeldBack)
	assert.EqualValues(t, totalProcessed, noop.Stats().Items)

	// A single write request cannot be split: it is forwarded whole.
	out, err := write(c, "items", items("p", 99999, 1))
	require.NoError(t, err)
	assert.Empty(t, out.UnprocessedItems)
	assert.Len(t, rec.take(), 1)
	assert.EqualValues(t, 1, p.Stats().PartialSkipped)
}

// difference returns a minus b (multisets of strings).
func difference(a, b []string) []string {
	drop := map[string]int{}
	for _, k := range b {
		drop[k]++
	}
	var out []string
	for _, k := range a {
		if drop[k] > 0 {
			drop[k]--
			continue
		}
		out = append(out, k)
	}
	return out
}

func TestLatency(t *testing.T) {
	_, _, backend := startNoopBackend(t)
	p, c := startProxy(t, backend, Config{Latency: 20 * time.Millisecond, Seed: 3})
	start := time.Now()
	for i := range 10 {
		_, err := write(c, "items", items("p", i, 1))
		require.NoError(t, err)
	}
	elapsed := time.Since(start)
	st := p.Stats()
	assert.LessOrEqual(t, st.DelayMillis, int64(200))
	assert.Greater(t, st.DelayMillis, int64(0))
	assert.GreaterOrEqual(t, elapsed, time.Duration(st.DelayMillis)*time.Millisecond)
	assert.LessOrEqual(t, st.Delayed, int64(10))
}

func TestSeedIsReproducible(t *testing.T) {
	cfg := Config{Throttle: 0.2, Throttling: 0.2, Error5xx: 0.2, Partial: 0.3, Seed: 42}
	outcomes := func() string {
		_, _, backend := startNoopBackend(t)
		_, c := startProxy(t, backend, cfg)
		var sb strings.Builder
		for i := range 40 {
			out, err := write(c, "items", items("p", i*25, 25))
			var apiErr smithy.APIError
			switch {
			case errors.As(err, &apiErr):
				sb.WriteString(apiErr.ErrorCode())
			case err != nil:
				sb.WriteString("err")
			default:
				fmt.Fprintf(&sb, "ok%d", len(out.UnprocessedItems["items"]))
			}
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	first := outcomes()
	assert.Equal(t, first, outcomes())
	for _, want := range []string{"ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerError", "ok0"} {
		assert.Contains(t, first, want)
	}
}

func TestHeadersPassThrough(t *testing.T) {
	var got []*http.Request
	var gotBodies [][]byte
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = append(got, r)
		gotBodies = append(gotBodies, body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = io.WriteString(w, `{"UnprocessedItems":{}}`)
	}))
	defer backend.Close()
	url, stop, err := Start(backend.URL, Config{Partial: 1})
	require.NoError(t, err)
	defer stop()

	body := `{"RequestItems":{"items":[` +
		`{"PutRequest":{"Item":{"PK":{"S":"a<b>"},"SK":{"S":"1"}}}},` +
		`{"PutRequest":{"Item":{"PK":{"S":"a"},"SK":{"S":"2"}}}},` +
		`{"PutRequest":{"Item":{"PK":{"S":"a"},"SK":{"S":"3"}}}}]}}`
	req, _ := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(body))
	req.Host = "dynamodb.us-east-1.amazonaws.com"
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.BatchWriteItem")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc")
	req.Header.Set("X-Amz-Date", "20240101T000000Z")
	req.Header.Set("X-Amz-Content-Sha256", "stale")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	respBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	require.Len(t, got, 1)
	in := got[0]
	assert.Equal(t, "dynamodb.us-east-1.amazonaws.com", in.Host)
	for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Target", "Content-Type"} {
		assert.Equal(t, req.Header.Get(h), in.Header.Get(h), h)
	}
	assert.EqualValues(t, len(gotBodies[0]), in.ContentLength)
	assert.NotEqual(t, "stale", in.Header.Get("X-Amz-Content-Sha256"))
	assert.Len(t, in.Header.Get("X-Amz-Content-Sha256"), 64)
	assert.NotContains(t, string(gotBodies[0]), `\u003c`, "rewritten bodies are not HTML-escaped")

	// The response carries the held-back requests and a valid CRC32.
	var out struct{ UnprocessedItems map[string][]json.RawMessage }
	require.NoError(t, json.Unmarshal(respBody, &out))
	var fwd struct{ RequestItems map[string][]json.RawMessage }
	require.NoError(t, json.Unmarshal(gotBodies[0], &fwd))
	assert.Equal(t, 3, len(out.UnprocessedItems["items"])+len(fwd.RequestItems["items"]))
	assert.NotEmpty(t, resp.Header.Get("X-Amz-Crc32"))
}

func TestStatsEndpointAndConfig(t *testing.T) {
	_, _, backend := startNoopBackend(t)
	url, stop, err := Start(backend, Config{Throttle: 1})
	require.NoError(t, err)
	defer stop()
	_, err = write(newClient(url), "items", items("p", 0, 1))
	require.Error(t, err)
	resp, err := http.Get(url + StatsPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	var st Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	assert.EqualValues(t, 1, st.Requests)
	assert.EqualValues(t, 1, st.Throttle)
	assert.EqualValues(t, 0, st.Forwarded)

	for _, bad := range []Config{{Throttle: 0.6, Partial: 0.5}, {Reset: -0.1}, {Error5xx: 1.5}, {Latency: -time.Second}} {
		_, err := New(backend, bad)
		assert.Error(t, err, "%+v", bad)
	}
	_, err = New("127.0.0.1:8000", Config{})
	assert.Error(t, err)

	// A dead backend is reported as a retryable 502.
	p, c := startProxy(t, "http://127.0.0.1:1", Config{})
	_, err = write(c, "items", items("p", 0, 1))
	assert.Equal(t, http.StatusBadGateway, httpStatus(err))
	requireRetryable(t, err)
	assert.EqualValues(t, 1, p.Stats().BackendErrors)
}
