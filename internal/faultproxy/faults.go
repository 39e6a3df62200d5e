package faultproxy

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// fault is the outcome drawn for one request.
type fault uint8

const (
	faultNone fault = iota
	faultReset
	faultThrottle
	faultThrottling
	faultError5xx
	faultPartial
	faultResetAfter
)

// Error shapes, as DynamoDB sends them. The SDK keeps the part after '#'
// as the error code: ProvisionedThroughputExceededException,
// ThrottlingException and InternalServerError map to typed errors in
// service/dynamodb/types; ServiceUnavailable surfaces as a generic API
// error whose HTTP status (503) the SDK's retryer treats as retryable.
const (
	typeThroughput  = "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"
	typeThrottling  = "com.amazon.coral.availability#ThrottlingException"
	typeInternal    = "com.amazonaws.dynamodb.v20120810#InternalServerError"
	typeUnavailable = "com.amazonaws.dynamodb.v20120810#ServiceUnavailable"
)

// dice draws the per-request random choices from one seeded generator.
// Draws happen under a mutex in arrival order, so a sequential client sees a
// reproducible sequence of faults for a given seed; concurrent clients see
// the same rates but an arrival-dependent assignment.
type dice struct {
	mu  sync.Mutex
	rng *rand.Rand
	cfg *Config
	n5x uint64 // alternates 500 and 503
}

func newDice(cfg *Config) *dice {
	return &dice{rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), cfg: cfg}
}

// roll picks at most one fault for a request, and its added latency. The
// fault rates are probabilities of mutually exclusive outcomes carved out of
// a single uniform draw, so each configured rate is exactly the share of
// eligible requests that get that fault.
func (d *dice) roll(op string) (f fault, delay time.Duration, use503 bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg.Latency > 0 {
		delay = time.Duration(d.rng.Int64N(int64(d.cfg.Latency) + 1))
	}
	u := d.rng.Float64()
	for _, c := range []struct {
		rate float64
		f    fault
	}{
		{d.cfg.Reset, faultReset},
		{d.cfg.Throttle, faultThrottle},
		{d.cfg.Throttling, faultThrottling},
		{d.cfg.Error5xx, faultError5xx},
		{d.cfg.Partial, faultPartial},
		{d.cfg.ResetAfter, faultResetAfter},
	} {
		if u < c.rate {
			f = c.f
			break
		}
		u -= c.rate
	}
	if f == faultPartial && op != "BatchWriteItem" {
		f = faultNone // partial success only exists for batch writes
	}
	if f == faultError5xx {
		use503 = d.n5x%2 == 1
		d.n5x++
	}
	return f, delay, use503
}

// subset picks which of n write requests to forward: a random non-empty
// strict subset (n >= 2), as a keep mask.
func (d *dice) subset(n int) []bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := 1 + d.rng.IntN(n-1)
	keep := make([]bool, n)
	for _, i := range d.rng.Perm(n)[:k] {
		keep[i] = true
	}
	return keep
}

// writeAPIError writes a DynamoDB-shaped error response.
func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	body, _ := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{typ, msg})
	h := w.Header()
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Amzn-Requestid", "faultproxy-injected")
	// DynamoDB sends the body's CRC32 with errors too; without it the SDK
	// reports a checksum mismatch and drops the connection, a cost the real
	// service does not impose.
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeThrottle(w http.ResponseWriter) {
	writeAPIError(w, http.StatusBadRequest, typeThroughput,
		"The level of configured provisioned throughput for the table was exceeded. "+
			"Consider increasing your provisioning level with the UpdateTable API. (injected)")
}

func writeThrottling(w http.ResponseWriter) {
	writeAPIError(w, http.StatusBadRequest, typeThrottling, "Rate of requests exceeds the allowed throughput. (injected)")
}

func write5xx(w http.ResponseWriter, use503 bool) {
	if use503 {
		writeAPIError(w, http.StatusServiceUnavailable, typeUnavailable, "injected")
		return
	}
	writeAPIError(w, http.StatusInternalServerError, typeInternal, "injected")
}

// resetConnection drops the client's connection without a response. With
// SO_LINGER 0 the close sends a TCP RST, which the client reads as
// "connection reset by peer", as when a load balancer kills a connection.
// The request body must already have been read.
func resetConnection(w http.ResponseWriter) error {
	hj, ok := w.(http.Hijacker)
	if !ok {
		// HTTP/2 cannot hijack; aborting the handler resets the stream.
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return fmt.Errorf("hijack: %w", err)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	return conn.Close()
}
