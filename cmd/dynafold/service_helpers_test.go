package main

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/stretchr/testify/require"
)

// What the tests of sync as a service share: a scraper of its metrics and
// health endpoints, and a churn that keeps committing while servers go
// away.

// freeAddr is a loopback address nothing listens on, for --metrics-addr.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// scrape reads /metrics (testenv.Scrape).
func scrape(addr string) (map[string]float64, error) { return testenv.Scrape(addr) }

// sample is one series' value, found by name and the labels given (the
// table label is not needed).
func sample(m map[string]float64, name string, labels ...string) (float64, bool) {
	for k, v := range m {
		base, rest, _ := strings.Cut(k, "{")
		if base != name {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(rest, l) {
				ok = false
			}
		}
		if ok {
			return v, true
		}
	}
	return 0, false
}

// ready is /readyz's answer: 200 or not.
func ready(addr string) (bool, error) {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return false, err
	}
	// Read to the end, so that the connection is used again: the watcher
	// asks many times a second.
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}

// watcher scrapes a sync's endpoints every 20 ms and remembers
// what it saw, so that a test can ask whether readiness dropped and came
// back, or the source was reported disconnected, around a fault.
type watcher struct {
	addr string
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	seen    []observation
	scrapes int
}

type observation struct {
	at        time.Time
	ready     bool
	connected float64
	lag       float64
	applied   float64
}

func watch(t *testing.T, addr string) *watcher {
	w := &watcher{addr: addr, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			r, rerr := ready(addr)
			m, merr := scrape(addr)
			if rerr != nil || merr != nil {
				continue
			}
			o := observation{at: time.Now(), ready: r}
			o.connected, _ = sample(m, "dynafold_source_connected")
			o.lag, _ = sample(m, "dynafold_sync_lag_seconds")
			o.applied, _ = sample(m, "dynafold_sync_changes_applied_total")
			w.mu.Lock()
			w.seen = append(w.seen, o)
			w.scrapes++
			w.mu.Unlock()
		}
	}()
	t.Cleanup(w.close)
	return w
}

func (w *watcher) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// since returns the observations made after at.
func (w *watcher) since(at time.Time) []observation {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []observation
	for _, o := range w.seen {
		if o.at.After(at) {
			out = append(out, o)
		}
	}
	return out
}

// waitReady waits until the watcher saw the sync ready after at.
func (w *watcher) waitReady(t *testing.T, at time.Time, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, o := range w.since(at) {
			if o.ready {
				return true
			}
		}
		return false
	}, within, 100*time.Millisecond, "the sync is ready again after %s", at.Format(time.TimeOnly))
}

// churn commits the portfolio workload's random transactions in the
// background until stopped. A transaction that fails (its server went
// away) is let go, and the workload's model of the source is read again
// once the server answers.
type churn struct {
	driver, dsn string
	stop        chan struct{}
	done        chan struct{}
	committed   atomic.Int64
	failed      atomic.Int64
}

func startChurn(t *testing.T, driver, dsn string, seed uint64) *churn {
	c := &churn{driver: driver, dsn: dsn, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run(seed)
	t.Cleanup(func() { c.halt() })
	return c
}

func (c *churn) run(seed uint64) {
	defer close(c.done)
	rng := rand.New(rand.NewPCG(seed, 3))
	nextID := 1_000_000 * (1 + int(seed%1000))
	var w *portfolioWork
	for {
		select {
		case <-c.stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if w == nil {
			if w = c.model(); w == nil {
				continue
			}
			w.nextID = nextID
		}
		stmts := w.next(rng)
		nextID = w.nextID
		if err := execScript(c.driver, c.dsn, "START TRANSACTION;\n"+strings.Join(stmts, ";\n")+";\nCOMMIT;"); err != nil {
			c.failed.Add(1)
			w = nil
			continue
		}
		c.committed.Add(1)
	}
}

// model reads the source into a workload, or nil while it cannot.
func (c *churn) model() *portfolioWork {
	var failed error
	q := func(query string) [][]string {
		rows, err := tryRows(c.driver, c.dsn, query)
		if err != nil {
			failed = err
		}
		return rows
	}
	w := newPortfolioWork(q)
	if failed != nil {
		return nil
	}
	return w
}

// halt stops the churn and waits for its last transaction.
func (c *churn) halt() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}

// tryRows runs a query and returns its rows as text, or the error; MySQL
// sessions read double quotes as identifier quotes, as the workloads write
// them.
func tryRows(driver, dsn, query string) ([][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var setup []string
	if driver == "mysql" {
		setup = []string{strings.TrimSuffix(strings.TrimSpace(ansiQuotes), ";")}
	}
	return testenv.QueryRows(ctx, driver, dsn, query, setup...)
}
