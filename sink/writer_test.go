package sink

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/mapping"
)

// fakeAPI answers BatchWriteItem from a script of responses, recording
// what it was sent.
type fakeAPI struct {
	mu      sync.Mutex
	script  []func(reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error)
	calls   [][]types.WriteRequest
	written map[string]int
}

func (f *fakeAPI) BatchWriteItem(_ context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	reqs := in.RequestItems["t"]
	f.calls = append(f.calls, reqs)
	step := func(reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error) {
		return &dynamodb.BatchWriteItemOutput{}, nil
	}
	if len(f.script) > 0 {
		step, f.script = f.script[0], f.script[1:]
	}
	out, err := step(reqs)
	if err == nil {
		unprocessed := map[string]bool{}
		for _, r := range out.UnprocessedItems["t"] {
			unprocessed[keyOf(r.PutRequest.Item)] = true
		}
		for _, r := range reqs {
			if k := keyOf(r.PutRequest.Item); !unprocessed[k] {
				f.written[k]++
			}
		}
	}
	return out, err
}

func keyOf(item map[string]types.AttributeValue) string {
	return item["PK"].(*types.AttributeValueMemberS).Value
}

type results struct {
	mu        sync.Mutex
	acked     []string
	rejected  map[string]error
	retried   int
	throttled int
}

func (r *results) Acked(items []*mapping.Item) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range items {
		r.acked = append(r.acked, it.Key)
	}
}

func (r *results) Rejected(it *mapping.Item, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected[it.Key] = err
}

func (r *results) Retried(_ []*mapping.Item, throttled bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retried++
	if throttled {
		r.throttled++
	}
}

func batch(n int) []*mapping.Item {
	out := make([]*mapping.Item, n)
	for i := range out {
		k := fmt.Sprintf("K%02d", i)
		out[i] = &mapping.Item{Key: k, PKLen: len(k), Size: 100, Attrs: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: k}}}
	}
	return out
}

func newTestWriter(api BatchWriteAPI) *DynamoWriter {
	noSleep := func(context.Context, time.Duration) error { return nil }
	return NewDynamoWriter(api, &mapping.TableSchema{Name: "t", PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}}, WriterOptions{Sleep: noSleep, MaxAttempts: 5})
}

func unprocessedFirst(n int) func([]types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error) {
	return func(reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error) {
		return &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{"t": reqs[:min(n, len(reqs))]}}, nil
	}
}

func apiError(code string) func([]types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error) {
	return func([]types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error) {
		return nil, &smithy.GenericAPIError{Code: code, Message: "injected"}
	}
}

func TestWriterRetriesUnprocessedUntilAllAcknowledged(t *testing.T) {
	api := &fakeAPI{written: map[string]int{}, script: []func([]types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error){
		unprocessedFirst(10),
		apiError("ProvisionedThroughputExceededException"),
		unprocessedFirst(3),
		apiError("InternalServerError"),
	}}
	w := newTestWriter(api)
	res := &results{rejected: map[string]error{}}
	require.NoError(t, w.Write(context.Background(), batch(25), res))
	require.Len(t, res.acked, 25)
	require.Len(t, api.written, 25)
	require.Len(t, api.calls, 5)
	require.Len(t, api.calls[1], 10, "only the unprocessed items are sent again")
	require.Len(t, api.calls[4], 3)
	st := w.Stats()
	require.EqualValues(t, 5, st.Requests)
	require.EqualValues(t, 4, st.Retried)
	require.EqualValues(t, 3, st.Throttled, "two unprocessed answers and one exception")
	require.EqualValues(t, 13, st.UnprocessedItems)
	require.EqualValues(t, 25, st.Items)
	require.Equal(t, 4, res.retried)
	require.Equal(t, 3, res.throttled)
}

func TestWriterIsolatesAnInvalidItem(t *testing.T) {
	// The whole batch is refused; written one by one, only K07 is.
	script := []func([]types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error){apiError("ValidationException")}
	for i := 0; i < 25; i++ {
		if i == 7 {
			script = append(script, apiError("ValidationException"))
		} else {
			script = append(script, func([]types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error) {
				return &dynamodb.BatchWriteItemOutput{}, nil
			})
		}
	}
	api := &fakeAPI{written: map[string]int{}, script: script}
	res := &results{rejected: map[string]error{}}
	require.NoError(t, newTestWriter(api).Write(context.Background(), batch(25), res))
	require.Len(t, res.acked, 24)
	require.Len(t, res.rejected, 1)
	require.ErrorContains(t, res.rejected["K07"], "DynamoDB refused the item")
}

func TestWriterGivesUpAndStopsOnFatalErrors(t *testing.T) {
	api := &fakeAPI{written: map[string]int{}}
	for i := 0; i < 10; i++ {
		api.script = append(api.script, apiError("ThrottlingException"))
	}
	err := newTestWriter(api).Write(context.Background(), batch(3), &results{rejected: map[string]error{}})
	require.ErrorContains(t, err, "giving up after 5 attempts")

	api = &fakeAPI{written: map[string]int{}, script: []func([]types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error){
		func([]types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error) {
			return nil, &types.ResourceNotFoundException{Message: new(string)}
		},
	}}
	err = newTestWriter(api).Write(context.Background(), batch(3), &results{rejected: map[string]error{}})
	var nf *types.ResourceNotFoundException
	require.ErrorAs(t, err, &nf)
	require.Len(t, api.calls, 1, "a missing table is not retried")
}

func TestWriterStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	api := &fakeAPI{written: map[string]int{}, script: []func([]types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error){
		func(reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error) {
			cancel()
			return &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{"t": reqs}}, nil
		},
	}}
	w := NewDynamoWriter(api, &mapping.TableSchema{Name: "t", PK: mapping.KeyAttr{Name: "PK"}}, WriterOptions{})
	err := w.Write(ctx, batch(2), &results{rejected: map[string]error{}})
	require.True(t, errors.Is(err, context.Canceled))
}

func TestClassify(t *testing.T) {
	require.Equal(t, classThrottle, classify(&types.ProvisionedThroughputExceededException{}))
	require.Equal(t, classThrottle, classify(fmt.Errorf("wrapped: %w", &types.ThrottlingException{})))
	require.Equal(t, classThrottle, classify(&smithy.GenericAPIError{Code: "RequestLimitExceeded"}))
	require.Equal(t, classTransient, classify(&types.InternalServerError{}))
	require.Equal(t, classInvalid, classify(&smithy.GenericAPIError{Code: "ValidationException"}))
	require.Equal(t, classFatal, classify(&smithy.GenericAPIError{Code: "AccessDeniedException"}))
	require.Equal(t, classCanceled, classify(context.Canceled))
}

func TestAdaptiveRate(t *testing.T) {
	now := time.Unix(1000, 0)
	a := newAdaptiveRate(1000, func() time.Time { return now })
	require.Equal(t, 1000.0, a.Current())
	a.Throttled()
	require.Equal(t, 1000.0, a.Current(), "one throttled request among the first few says nothing yet")
	now = now.Add(time.Second)
	for i := 0; i < minJudged-2; i++ {
		a.Succeeded(10)
	}
	a.Throttled()
	require.Equal(t, 750.0, a.Current(), "cut to three quarters once minJudged requests were seen")
	a.Throttled()
	require.Equal(t, 750.0, a.Current(), "at most one cut a second")
	now = now.Add(3 * time.Second)
	a.Succeeded(10)
	require.Equal(t, 787.5, a.Current(), "raised by 5% a second")
	for i := 0; i < 100; i++ {
		now = now.Add(time.Second)
		a.Succeeded(10)
	}
	require.Equal(t, 1000.0, a.Current(), "never above the cap")

	u := newAdaptiveRate(0, func() time.Time { return now })
	require.True(t, u.Current() > 1e300, "unlimited without a cap")
	for i := 0; i < minJudged; i++ {
		u.Throttled()
	}
	require.True(t, u.Current() > 1e300, "no cut in the first second: it measures the start of the run")
	now = now.Add(time.Second)
	u.Throttled()
	require.Equal(t, 750.0, u.Current(), "a second throttled with nothing acknowledged: from one partition's worth")
	for i := 0; i < 20; i++ { // 10 units every 60 ms: the first second closes at 1.02 s with 160
		now = now.Add(60 * time.Millisecond)
		u.Succeeded(10)
	}
	require.Equal(t, 750.0, u.Current(), "the cut helped (nothing throttled since): kept")
	now = now.Add(100 * time.Millisecond)
	u.Throttled()
	require.InDelta(t, 0.75*160/1.02, u.Current(), 1e-9, "cut from what actually got through")
}

// simulateRate drives an AdaptiveRate for a simulated minute and a half of
// 10-unit requests sent at its current rate (capped at 2000 units/s when
// unlimited), each throttled with probability share(rate); it returns the
// rate over the last 30 seconds, averaged.
func simulateRate(t *testing.T, a *AdaptiveRate, now *time.Time, share func(rate float64) float64) float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	sum, n, due := 0.0, 0, 0.0
	for step := 0; step < 900; step++ { // 100 ms steps
		*now = now.Add(100 * time.Millisecond)
		r := min(a.Current(), 2000)
		due += r / 100 // requests of 10 units in 100 ms
		for ; due >= 1; due-- {
			if rng.Float64() < share(r) {
				a.Throttled()
			} else {
				a.Succeeded(10)
			}
		}
		if step >= 600 {
			sum += min(a.Current(), 2000)
			n++
		}
	}
	return sum / float64(n)
}

// Throttling that does not depend on the rate (here 30% of requests at any
// rate) does not ratchet the rate down: each cut is undone when it does not
// help, and the rate stays near the cap.
func TestAdaptiveRateIgnoresThrottlingTheRateDoesNotCause(t *testing.T) {
	for _, limit := range []float64{1000, 200} { // 100 and 20 requests a second
		now := time.Unix(1000, 0)
		a := newAdaptiveRate(limit, func() time.Time { return now })
		avg := simulateRate(t, a, &now, func(float64) float64 { return 0.3 })
		t.Logf("cap %.0f: average rate %.0f, %d cuts, %d undone", limit, avg, a.cuts, a.Undone())
		require.Greater(t, avg, 0.7*limit)
		require.Positive(t, a.Undone())
	}
}

// Throttling the rate does cause (a table that takes 500 units a second,
// throttling the excess) brings the rate down to about the capacity, and
// keeps it there.
func TestAdaptiveRateFindsTheCapacity(t *testing.T) {
	now := time.Unix(1000, 0)
	a := newAdaptiveRate(2000, func() time.Time { return now })
	avg := simulateRate(t, a, &now, func(r float64) float64 { return max(0, (r-500)/r) })
	t.Logf("average rate %.0f, %d cuts, %d undone", avg, a.cuts, a.Undone())
	require.InDelta(t, 500, avg, 150)
}

// Faults the rate does not cause — throttling at any rate, partial
// batches, 500s and dropped connections, alone and together — cost the
// writer about their share of requests, not a collapse of its rate: eight
// writers, unlimited, in simulated time, against the same run without
// faults. Here every request is a 15–25 ms round trip that nothing else
// limits, so a retry and its backoff cost their full time (20% partial
// batches alone cost about 1.4×); before the throttled share needed
// minJudged requests, the first throttle of a run cut the rate for good
// and these runs were 5 to 60 times slower.
func TestWriterRateSurvivesMixedFaults(t *testing.T) {
	clean := simulateWriters(t, 1, 8, 0, simFaults{})
	t.Logf("no faults: %.0f items/s", clean.itemsPerSec)
	for _, c := range []struct {
		name   string
		faults simFaults
		within float64 // at most this many times slower than clean
	}{
		{"10% throttled", simFaults{throttled: 0.10}, 1.3},
		{"20% partial batches", simFaults{partial: 0.20}, 1.5},
		{"5% 500", simFaults{error5xx: 0.05}, 1.3},
		{"2% dropped connections", simFaults{dropped: 0.02}, 1.3},
		{"10% throttled, 5% 500", simFaults{throttled: 0.10, error5xx: 0.05}, 2},
		{"10% throttled, 2% dropped", simFaults{throttled: 0.10, dropped: 0.02}, 2},
		{"10% throttled, 20% partial, 5% 500, 2% dropped", simFaults{throttled: 0.10, partial: 0.20, error5xx: 0.05, dropped: 0.02}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			// One seed proves it in the CI tier (this test is its race
			// set's longest); the full tier runs a second.
			for seed := uint64(1); seed <= uint64(testenv.Size(1, 2)); seed++ {
				r := simulateWriters(t, seed, 8, 0, c.faults)
				slower := clean.itemsPerSec / r.itemsPerSec
				t.Logf("seed %d: %.0f items/s, %.2f× slower; %d requests, %d throttled, %d cuts (%d undone)",
					seed, r.itemsPerSec, slower, r.stats.Requests, r.stats.Throttled, r.stats.RateCuts, r.stats.RateCutsUndone)
				require.LessOrEqual(t, slower, c.within)
			}
		})
	}
}

// A table that takes 3,000 units a second, throttling the excess, behind a
// path that fails 7% of requests with 500s and dropped connections: the
// writer settles near the capacity instead of collapsing or overrunning it.
func TestWriterFindsTheCapacityThroughMixedFaults(t *testing.T) {
	const capacity = 3000
	for seed := uint64(1); seed <= 2; seed++ {
		r := simulateWriters(t, seed, 8, 0, simFaults{capacity: capacity, error5xx: 0.05, dropped: 0.02})
		t.Logf("seed %d: %.0f items/s; %d requests, %d throttled, %d cuts (%d undone)",
			seed, r.itemsPerSec, r.stats.Requests, r.stats.Throttled, r.stats.RateCuts, r.stats.RateCutsUndone)
		require.Greater(t, r.itemsPerSec, 0.8*capacity)
		require.Less(t, float64(r.stats.Throttled)/float64(r.stats.Requests), 0.10, "throttled share")
	}
}
