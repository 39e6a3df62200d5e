// Package faultproxy is a fault-injecting reverse proxy for the DynamoDB
// JSON protocol. Placed between dynafold and a DynamoDB-compatible server
// (dynalite in tests), it makes requests fail the ways real DynamoDB and the
// network between make them fail, so tests can prove that dynafold neither
// loses nor invents writes:
//
//   - throttle: 400 ProvisionedThroughputExceededException, not forwarded;
//   - throttling: 400 ThrottlingException, not forwarded;
//   - partial (BatchWriteItem only): a random non-empty strict subset of the
//     write requests is forwarded, the rest are added to UnprocessedItems;
//   - error5xx: 500 InternalServerError and 503 ServiceUnavailable,
//     alternately, not forwarded;
//   - reset: the connection is reset without a response, not forwarded;
//   - reset_after: forwarded and applied, then the connection is reset
//     instead of answering: the client cannot know its write succeeded;
//   - latency: a uniformly random delay up to a maximum before handling.
//
// Faults apply only to the configured operations (default BatchWriteItem);
// other requests pass through untouched. Request headers, including the
// SigV4 Authorization and X-Amz-* headers, are forwarded unchanged. A
// partial fault necessarily changes the body, which invalidates the
// signature's payload hash, so it only suits backends that do not verify
// signatures (dynalite, DynamoDB Local, ddbnoop).
package faultproxy

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// StatsPath serves the proxy's Stats as JSON; it is never forwarded.
const StatsPath = "/__faultproxy/stats"

// maxBody is DynamoDB's 16 MB request limit, with room for a response.
const maxBody = 32 << 20

// Config sets the fault rates. Each rate is the probability, per eligible
// request, of that fault; the faults are mutually exclusive, so the rates
// must add up to at most 1. Latency is independent of them.
type Config struct {
	Throttle   float64
	Throttling float64
	Partial    float64 // BatchWriteItem only; other operations pass instead
	Error5xx   float64
	Reset      float64
	ResetAfter float64
	// Latency is the maximum added delay, drawn uniformly from [0, Latency].
	Latency time.Duration
	// Seed seeds the random generator, for reproducible runs.
	Seed uint64
	// Ops lists the operations (X-Amz-Target suffixes) subject to faults;
	// "*" means all. Empty means BatchWriteItem only.
	Ops []string
	// Client forwards requests; nil uses a dedicated keep-alive client.
	Client *http.Client
}

func (c *Config) validate() error {
	sum := 0.0
	for name, r := range map[string]float64{
		"throttle": c.Throttle, "throttling": c.Throttling, "partial": c.Partial,
		"5xx": c.Error5xx, "reset": c.Reset, "reset-after": c.ResetAfter,
	} {
		if r < 0 || r > 1 {
			return fmt.Errorf("faultproxy: %s rate %g is not in [0, 1]", name, r)
		}
		sum += r
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("faultproxy: fault rates add up to %g; they are exclusive outcomes and must add up to at most 1", sum)
	}
	if c.Latency < 0 {
		return errors.New("faultproxy: negative latency")
	}
	return nil
}

// Proxy is the fault-injecting reverse proxy. It is an http.Handler.
type Proxy struct {
	backend *url.URL
	cfg     Config
	allOps  bool
	ops     map[string]bool
	client  *http.Client
	dice    *dice
	stats   counters
}

// New returns a Proxy forwarding to backendURL (e.g. http://127.0.0.1:58000).
func New(backendURL string, cfg Config) (*Proxy, error) {
	u, err := url.Parse(backendURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: backend URL %q must be http(s)://host[:port]", backendURL)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Proxy{backend: u, cfg: cfg, ops: map[string]bool{}, client: cfg.Client}
	if len(cfg.Ops) == 0 {
		p.ops["BatchWriteItem"] = true
	}
	for _, op := range cfg.Ops {
		if op == "*" {
			p.allOps = true
		}
		p.ops[op] = true
	}
	if p.client == nil {
		p.client = &http.Client{Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 128,
			IdleConnTimeout:     90 * time.Second,
			// Pass bodies through byte for byte: the client's own
			// Accept-Encoding is forwarded, and CRC32 headers stay valid.
			DisableCompression: true,
		}}
	}
	p.dice = newDice(&p.cfg)
	return p, nil
}

// Stats returns a snapshot of the counters.
func (p *Proxy) Stats() Stats { return p.stats.snapshot() }

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == StatsPath {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p.Stats())
		return
	}
	p.stats.requests.Add(1)
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "faultproxy: reading request: "+err.Error(), http.StatusBadRequest)
		return
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	if !p.allOps && !p.ops[op] {
		p.pass(w, r, body)
		return
	}
	p.stats.eligible.Add(1)
	f, delay, use503 := p.dice.roll(op)
	if delay > 0 {
		p.stats.delayed.Add(1)
		p.stats.delayMillis.Add(delay.Milliseconds())
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	switch f {
	case faultReset:
		p.stats.reset.Add(1)
		_ = resetConnection(w)
	case faultThrottle:
		p.stats.throttle.Add(1)
		writeThrottle(w)
	case faultThrottling:
		p.stats.throttling.Add(1)
		writeThrottling(w)
	case faultError5xx:
		if use503 {
			p.stats.error503.Add(1)
		} else {
			p.stats.error500.Add(1)
		}
		write5xx(w, use503)
	case faultPartial:
		p.partial(w, r, body)
	case faultResetAfter:
		if _, err := p.forward(r, body, false); err != nil {
			p.backendError(w, err)
			return
		}
		p.stats.resetAfter.Add(1)
		_ = resetConnection(w)
	default:
		p.pass(w, r, body)
	}
}

// pass forwards a request unchanged and relays the response unchanged.
func (p *Proxy) pass(w http.ResponseWriter, r *http.Request, body []byte) {
	resp, err := p.forward(r, body, false)
	if err != nil {
		p.backendError(w, err)
		return
	}
	resp.write(w)
}

// partial forwards part of a BatchWriteItem and reports the rest unprocessed.
func (p *Proxy) partial(w http.ResponseWriter, r *http.Request, body []byte) {
	fwd, held, ok := splitBatch(body, p.dice)
	if !ok {
		p.stats.partialSkipped.Add(1)
		p.pass(w, r, body)
		return
	}
	resp, err := p.forward(r, fwd, true)
	if err != nil {
		p.backendError(w, err)
		return
	}
	if resp.status != http.StatusOK {
		// The forwarded part failed as a whole; the client will resend the
		// whole batch, held-back requests included.
		resp.write(w)
		return
	}
	plain, err := resp.decodedBody()
	if err == nil {
		resp.body, err = mergeUnprocessed(plain, held)
	}
	if err != nil {
		// Relaying the backend's answer would claim the held-back requests
		// were written. Failing the call is the truthful option: resending
		// the forwarded puts and deletes is harmless.
		writeAPIError(w, http.StatusInternalServerError, typeInternal, "faultproxy: cannot merge response: "+err.Error())
		return
	}
	n := 0
	for _, reqs := range held {
		n += len(reqs)
	}
	p.stats.partial.Add(1)
	p.stats.partialHeldBack.Add(int64(n))
	resp.header.Del("Content-Encoding")
	resp.header.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(resp.body)), 10))
	resp.write(w)
}

func (p *Proxy) backendError(w http.ResponseWriter, err error) {
	p.stats.backendErrors.Add(1)
	writeAPIError(w, http.StatusBadGateway, typeInternal, "faultproxy: backend: "+err.Error())
}

// backendResponse is a fully read response from the backend.
type backendResponse struct {
	status int
	header http.Header
	body   []byte
}

// forward sends the request to the backend with its headers intact, except
// hop-by-hop ones and, when the body was rewritten, Content-Length and
// X-Amz-Content-Sha256, which must describe the new body. The Host header
// stays the one the client signed.
func (p *Proxy) forward(r *http.Request, body []byte, rewritten bool) (*backendResponse, error) {
	target := *p.backend
	target.Path = strings.TrimSuffix(p.backend.Path, "/") + r.URL.Path
	target.RawQuery = r.URL.RawQuery
	// A reset_after fault must still complete the write even if the client
	// gives up, so the backend request outlives the client's context.
	ctx := context.WithoutCancel(r.Context())
	out, err := http.NewRequestWithContext(ctx, r.Method, target.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	removeHopHeaders(out.Header)
	out.Header.Del("Content-Length")
	out.Host = r.Host
	out.ContentLength = int64(len(body))
	if rewritten && out.Header.Get("X-Amz-Content-Sha256") != "" {
		sum := sha256.Sum256(body)
		out.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	}
	p.stats.forwarded.Add(1)
	resp, err := p.client.Do(out)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	removeHopHeaders(resp.Header)
	return &backendResponse{status: resp.StatusCode, header: resp.Header, body: respBody}, nil
}

// decodedBody undoes a gzip Content-Encoding, if any.
func (b *backendResponse) decodedBody() ([]byte, error) {
	switch enc := b.header.Get("Content-Encoding"); enc {
	case "", "identity":
		return b.body, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b.body))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	default:
		return nil, fmt.Errorf("unsupported Content-Encoding %q", enc)
	}
}

func (b *backendResponse) write(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range b.header {
		h[k] = v
	}
	h.Set("Content-Length", strconv.Itoa(len(b.body)))
	w.WriteHeader(b.status)
	_, _ = w.Write(b.body)
}

// hopHeaders are meaningful only for one connection (RFC 9110 §7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}
