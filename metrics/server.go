// Package metrics serves what a monitor reads of a long run: Prometheus
// series on /metrics, liveness on /healthz and readiness on /readyz, on
// the address --metrics-addr names. Nothing it exposes carries a DSN, a
// credential or row data: only counts, positions, states and table names.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a registry with the Go runtime and process
// collectors, which every dynafold process exposes.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Health is liveness and readiness. Liveness fails only when the work
// loop has not iterated for the stall timeout; readiness is whatever the
// run last said (streaming and connected, for sync).
type Health struct {
	stall time.Duration
	now   func() time.Time
	beat  atomic.Int64 // unix nanoseconds of the last iteration

	mu     sync.Mutex
	ready  bool
	reason string
	checks []func() (bool, string)
}

// AddCheck adds a condition of readiness, asked at each /readyz: a part
// of the run that knows it cannot work now (a writer waiting for an
// endpoint) says so, with why.
func (h *Health) AddCheck(check func() (ok bool, reason string)) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.checks = append(h.checks, check)
	h.mu.Unlock()
}

// NewHealth returns a Health that is live from now and not ready.
func NewHealth(stall time.Duration) *Health {
	h := &Health{stall: stall, now: time.Now, reason: "starting"}
	h.Beat()
	return h
}

// Beat records an iteration of the work loop; called from any goroutine.
func (h *Health) Beat() {
	if h != nil {
		h.beat.Store(h.now().UnixNano())
	}
}

// SetReady records readiness, with the reason when not ready.
func (h *Health) SetReady(ready bool, reason string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.ready, h.reason = ready, reason
	h.mu.Unlock()
}

// Ready reports readiness and, when not ready, why.
func (h *Health) Ready() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.ready {
		return false, h.reason
	}
	for _, check := range h.checks {
		if ok, why := check(); !ok {
			return false, why
		}
	}
	return true, ""
}

// Live reports whether the work loop iterated within the stall timeout,
// and how long ago it last did.
func (h *Health) Live() (bool, time.Duration) {
	since := h.now().Sub(time.Unix(0, h.beat.Load()))
	return h.stall <= 0 || since <= h.stall, since
}

// Server is the HTTP listener of /metrics, /healthz and /readyz.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// Serve listens on addr and serves reg and h until Close.
func Serve(addr string, reg *prometheus.Registry, h *Health, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		live, since := h.Live()
		if !live {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "stalled: no iteration of the work loop for %s\n", since.Round(time.Second))
			return
		}
		fmt.Fprintf(w, "ok: last iteration %s ago\n", since.Round(time.Millisecond))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		ready, reason := h.Ready()
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %s\n", reason)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the metrics endpoint stopped", "error", err)
		}
	}()
	log.Info("serving metrics and health", "addr", ln.Addr().String())
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, letting scrapes in progress finish for a second.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
