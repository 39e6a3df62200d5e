package sink

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
)

// simClock is simulated time shared by goroutines started with Go. Only
// one of them runs at a time: Sleep parks the caller, and when every one
// is parked the clock jumps to the earliest wake-up and resumes that
// sleeper alone. A simulation is therefore deterministic, however many
// writers it runs, and takes no wall time.
type simClock struct {
	mu      sync.Mutex
	now     time.Time
	running int
	seq     int
	wakeups wakeupHeap
}

type wakeup struct {
	at  time.Time
	seq int
	ch  chan struct{}
}

type wakeupHeap []*wakeup

func (h wakeupHeap) Len() int { return len(h) }
func (h wakeupHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h wakeupHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *wakeupHeap) Push(x any)   { *h = append(*h, x.(*wakeup)) }
func (h *wakeupHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}

func newSimClock() *simClock { return &simClock{now: time.Unix(1_000_000, 0)} }

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep parks the caller for d of simulated time; a zero d still yields to
// the goroutines due now.
func (c *simClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	w := &wakeup{at: c.now.Add(max(d, 0)), seq: c.seq, ch: make(chan struct{})}
	c.seq++
	heap.Push(&c.wakeups, w)
	c.running--
	c.resume()
	c.mu.Unlock()
	<-w.ch
	return ctx.Err()
}

// Run runs f(0) … f(n-1) as simulated goroutines and waits for them.
func (c *simClock) Run(n int, f func(i int)) {
	c.mu.Lock()
	c.running += n // all counted before any parks: they start in order
	c.mu.Unlock()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				c.mu.Lock()
				c.running--
				c.resume()
				c.mu.Unlock()
			}()
			_ = c.Sleep(context.Background(), 0)
			f(i)
		}()
	}
	wg.Wait()
}

// resume wakes the earliest sleeper once nothing runs; c.mu is held.
func (c *simClock) resume() {
	if c.running > 0 || c.wakeups.Len() == 0 {
		return
	}
	w := heap.Pop(&c.wakeups).(*wakeup)
	if w.at.After(c.now) {
		c.now = w.at
	}
	c.running++
	close(w.ch)
}

// simFaults are the answers of a simulated table, as shares of requests.
type simFaults struct {
	throttled float64 // ProvisionedThroughputExceeded whatever the rate
	partial   float64 // part of the batch unprocessed
	error5xx  float64 // 500
	dropped   float64 // connection reset
	// capacity, when set, is the table's write units a second: requests
	// beyond it are throttled.
	capacity float64
}

// simAPI is a table in simulated time.
type simAPI struct {
	clock  *simClock
	faults simFaults
	mu     sync.Mutex
	rng    *rand.Rand
	last   time.Time
	tokens float64
}

func (s *simAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	reqs := in.RequestItems["t"]
	s.mu.Lock()
	f := s.faults
	u := s.rng.Float64()
	// Refusals are answered at once (1 to 6 ms), as a throttling table or
	// the fault proxy does; writes take 15 to 25 ms.
	quick := 1*time.Millisecond + time.Duration(s.rng.Int64N(int64(5*time.Millisecond)))
	slow := 15*time.Millisecond + time.Duration(s.rng.Int64N(int64(10*time.Millisecond)))
	held := 0
	if len(reqs) > 1 {
		held = 1 + s.rng.IntN(len(reqs)-1)
	}
	s.mu.Unlock()
	var err error
	switch {
	case u < f.throttled:
		err = &types.ProvisionedThroughputExceededException{Message: new(string)}
	case u < f.throttled+f.error5xx:
		err = &types.InternalServerError{Message: new(string)}
	case u < f.throttled+f.error5xx+f.dropped:
		err = &smithyhttp.RequestSendError{Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}
	}
	if err != nil {
		if serr := s.clock.Sleep(ctx, quick); serr != nil {
			return nil, serr
		}
		return nil, err
	}
	if serr := s.clock.Sleep(ctx, slow); serr != nil {
		return nil, serr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.capacity > 0 {
		// A token bucket refilled at capacity, holding a second's worth.
		now := s.clock.Now()
		s.tokens = min(s.tokens+now.Sub(s.last).Seconds()*f.capacity, f.capacity)
		s.last = now
		if s.tokens < float64(len(reqs)) {
			return nil, &types.ProvisionedThroughputExceededException{Message: new(string)}
		}
		s.tokens -= float64(len(reqs))
	}
	if u < f.throttled+f.error5xx+f.dropped+f.partial && held > 0 {
		return &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{"t": reqs[len(reqs)-held:]}}, nil
	}
	return &dynamodb.BatchWriteItemOutput{}, nil
}

// countingResults counts acknowledged items.
type countingResults struct {
	mu    sync.Mutex
	acked int
}

func (r *countingResults) Acked(items []*mapping.Item) {
	r.mu.Lock()
	r.acked += len(items)
	r.mu.Unlock()
}
func (r *countingResults) Rejected(*mapping.Item, error) {}
func (r *countingResults) Retried([]*mapping.Item, bool) {}

// simRun is the outcome of a simulated run.
type simRun struct {
	itemsPerSec float64 // acknowledged one-unit items a simulated second
	stats       Stats
}

// simulateWriters runs writers concurrent DynamoWriters' worth of Write
// calls (one shared writer, as the pipeline has) for a simulated minute
// against a table answering with faults, with the writer's real backoff
// and rate, and returns what got through.
func simulateWriters(t *testing.T, seed uint64, writers int, maxWCU float64, faults simFaults) simRun {
	t.Helper()
	clock := newSimClock()
	rng := rand.New(rand.NewPCG(seed, 1))
	api := &simAPI{clock: clock, faults: faults, rng: rand.New(rand.NewPCG(seed, 2))}
	rate := newAdaptiveRate(maxWCU, clock.Now)
	rate.sleep = clock.Sleep
	backoff := DefaultBackoff()
	var rmu sync.Mutex
	backoff.Rand = func() float64 { rmu.Lock(); defer rmu.Unlock(); return rng.Float64() }
	w := NewDynamoWriter(api, &mapping.TableSchema{Name: "t", PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}},
		WriterOptions{Rate: rate, Backoff: &backoff, Sleep: clock.Sleep})
	res := &countingResults{}
	const duration = time.Minute
	start := clock.Now()
	end := start.Add(duration)
	var errs []error
	var mu sync.Mutex
	next := 0
	clock.Run(writers, func(int) {
		for clock.Now().Before(end) {
			mu.Lock()
			b := make([]*mapping.Item, MaxBatchItems)
			for j := range b {
				k := fmt.Sprintf("K%09d", next)
				next++
				b[j] = &mapping.Item{Key: k, PKLen: len(k), Size: 100, Attrs: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: k}}}
			}
			mu.Unlock()
			if err := w.Write(context.Background(), b, res); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
		}
	})
	require.Empty(t, errs)
	elapsed := clock.Now().Sub(start).Seconds()
	return simRun{itemsPerSec: float64(res.acked) / elapsed, stats: w.Stats()}
}
