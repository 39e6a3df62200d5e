package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynafold/dynafold/sink"
)

// stateCompare is one scenario run twice on the same backlog: with the
// state in local files and with --state dynamodb:// at the state
// endpoint. Ratio is the DynamoDB state's apply rate over the local one;
// the goal of issue 27 is at least Goal.
type stateCompare struct {
	Source        string  `json:"source"`
	Scenario      string  `json:"scenario"`
	StateEndpoint string  `json:"state_endpoint"`
	Changes       int64   `json:"changes"`
	LocalRate     float64 `json:"local_changes_per_second"`
	DynamoRate    float64 `json:"dynamodb_state_changes_per_second"`
	Ratio         float64 `json:"ratio"`
	Goal          float64 `json:"goal"`
	LocalSeconds  float64 `json:"local_seconds"`
	DynamoSeconds float64 `json:"dynamodb_state_seconds"`
	// What the DynamoDB-state run asked of the state endpoint, counted by
	// a proxy in front of it: requests by operation, per round, and the
	// wall time during which at least one was in flight.
	Rounds           int64            `json:"rounds"`
	StateRequests    map[string]int64 `json:"state_requests"`
	RequestsPerRound float64          `json:"state_requests_per_round"`
	StateBusySeconds float64          `json:"state_busy_seconds"`
	// IndexCache is how the DynamoDB-state run's row-index lookups were
	// answered: from memory, or by the state table.
	IndexCache *indexCache `json:"row_index_cache,omitempty"`
}

// stateProxy passes requests to the state endpoint and counts them: by
// operation (X-Amz-Target), and the time during which any was in flight.
type stateProxy struct {
	URL string
	srv *http.Server

	mu       sync.Mutex
	requests map[string]int64
	inFlight int
	since    time.Time
	busy     time.Duration
}

func startStateProxy(target string) (*stateProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 64}
	p := &stateProxy{URL: "http://" + ln.Addr().String(), requests: map[string]int64{}}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
		p.begin(op)
		defer p.end()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *stateProxy) begin(op string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests[op]++
	if p.inFlight == 0 {
		p.since = time.Now()
	}
	p.inFlight++
}

func (p *stateProxy) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight--
	if p.inFlight == 0 {
		p.busy += time.Since(p.since)
	}
}

// take returns the counts since the last take and zeroes them.
func (p *stateProxy) take() (map[string]int64, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	req, busy := p.requests, p.busy
	p.requests, p.busy = map[string]int64{}, 0
	return req, busy
}

func (p *stateProxy) close() { _ = p.srv.Close() }

// dynamoState is where the DynamoDB-state runs keep their state: a state
// table of this benchmark run, at the state endpoint through the proxy.
type dynamoState struct {
	endpoint string // the state endpoint itself
	table    string
	proxy    *stateProxy
}

func newDynamoState(endpoint string) (*dynamoState, error) {
	p, err := startStateProxy(endpoint)
	if err != nil {
		return nil, err
	}
	return &dynamoState{endpoint: endpoint, table: fmt.Sprintf("dynafold-bench-state-%d", time.Now().Unix()), proxy: p}, nil
}

func (s *dynamoState) flags() []string {
	return []string{"--state", "dynamodb://" + s.table, "--state-endpoint", s.proxy.URL}
}

// close deletes the state table and stops the proxy.
func (s *dynamoState) close(ctx context.Context) error {
	defer s.proxy.close()
	c, err := sink.NewClient(ctx, sink.ClientOptions{Endpoint: s.endpoint})
	if err != nil {
		return err
	}
	_, err = c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &s.table})
	return err
}

// withDynamoState is r's dataset synced into another table of the no-op
// endpoint (its own slot or replica, so that it applies the same backlog)
// with its state in the state table.
func (r *syncRun) withDynamoState(s *dynamoState) *syncRun {
	d := *r
	d.table = r.table + "_ds"
	d.state = s.flags()
	d.syncOnly = []string{"--index-cache", strconv.Itoa(r.o.stateIndexCache)}
	return &d
}

// compareState applies the backlog both runs have, local files first, and
// records both rates.
func compareState(ctx context.Context, db syncDB, scenario string, local, remote *syncRun, s *dynamoState, res *syncResults) error {
	prefix := db.name() + ": "
	lsc, err := local.catchUp(ctx, prefix+scenario+" → no-op", "")
	if err != nil {
		return err
	}
	res.Scenarios = append(res.Scenarios, *lsc)
	s.proxy.take()
	rsc, err := remote.catchUp(ctx, prefix+scenario+" → no-op, state in DynamoDB", "--state dynamodb:// at "+s.endpoint)
	if err != nil {
		return err
	}
	res.Scenarios = append(res.Scenarios, *rsc)
	reqs, busy := s.proxy.take()
	c := &stateCompare{
		Source: db.name(), Scenario: scenario, StateEndpoint: s.endpoint, Changes: rsc.Changes,
		LocalRate: lsc.ChangesPerSec, DynamoRate: rsc.ChangesPerSec, Ratio: rsc.ChangesPerSec / lsc.ChangesPerSec, Goal: 0.8,
		LocalSeconds: lsc.Seconds, DynamoSeconds: rsc.Seconds,
		Rounds: rsc.Rounds, StateRequests: reqs, StateBusySeconds: busy.Seconds(), IndexCache: rsc.cache,
	}
	var n int64
	for _, v := range reqs {
		n += v
	}
	if c.Rounds > 0 {
		c.RequestsPerRound = float64(n) / float64(c.Rounds)
	}
	res.StateDynamo = append(res.StateDynamo, c)
	return nil
}

func printStateCompare(cs []*stateCompare) {
	for _, c := range cs {
		ops := make([]string, 0, len(c.StateRequests))
		for op, n := range c.StateRequests {
			ops = append(ops, fmt.Sprintf("%s %d", op, n))
		}
		sort.Strings(ops)
		cache := "no row-index cache"
		if c.IndexCache != nil {
			w := c.IndexCache.Warmed
			cache = fmt.Sprintf("row index read into memory at the start: %d rows in %.1f s (whole index: %t); row-index lookups %d from memory, %d from the state table",
				w.Rows, w.Seconds, w.Whole, c.IndexCache.Hits, c.IndexCache.Misses)
		}
		fmt.Printf("%s: %s, state in DynamoDB (%s) against local files: %.0f against %.0f changes/s, %.2f× (goal %.1f×); %d rounds, %.1f state requests a round (%s), state requests in flight %.1f s of %.1f s; %s\n",
			c.Source, c.Scenario, c.StateEndpoint, c.DynamoRate, c.LocalRate, c.Ratio, c.Goal, c.Rounds, c.RequestsPerRound, strings.Join(ops, ", "), c.StateBusySeconds, c.DynamoSeconds, cache)
	}
}
