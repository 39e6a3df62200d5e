// Package tcpproxy is a TCP forwarder for tests that need a server to go
// away in the middle of a run: Close drops every connection and stops
// listening, so that the next connection attempt is refused, as when the
// server stops or its host goes down. Pause and Resume do the same for a
// while; SetTarget sends new connections to another server, as a failover
// behind one address does; SetLatency makes the server slow to answer, as
// across a long link.
package tcpproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards connections on a local port to one target address.
type Proxy struct {
	addr string

	mu     sync.Mutex
	ln     net.Listener // nil while paused
	target string
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
	// latency delays what the target sends before it is forwarded.
	latency atomic.Int64
}

// Start listens on 127.0.0.1 on a free port and forwards to target.
func Start(target string) (*Proxy, error) { return StartOn("127.0.0.1:0", target) }

// StartOn listens on addr (host:port, port 0 for a free one) and forwards
// to target: a test reaches a loopback server at another address.
func StartOn(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{addr: ln.Addr().String(), ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept(ln)
	return p, nil
}

// SetLatency delays every chunk the target sends by d before the client
// gets it: each round trip to the server then takes at least d, and a
// stream of chunks arrives d late, not d a chunk late.
func (p *Proxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// Port is the proxy's port.
func (p *Proxy) Port() int {
	_, port, _ := net.SplitHostPort(p.addr)
	n, _ := strconv.Atoi(port)
	return n
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		up, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, up) {
			c.Close()
			up.Close()
			return
		}
		p.wg.Add(2)
		go p.pipe(c, up, true)
		go p.pipe(up, c, false)
	}
}

// track records a connection pair unless the proxy is closed.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) pipe(dst, src net.Conn, fromTarget bool) {
	defer p.wg.Done()
	if fromTarget {
		p.delayed(dst, src)
	} else {
		_, _ = io.Copy(dst, src)
	}
	// One side ended: end the other too, as a dead peer would.
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, src)
	delete(p.conns, dst)
	p.mu.Unlock()
}

// delayed forwards what src sends, each chunk the latency after it was
// read. Chunks read while earlier ones wait are not held up by them: the
// link has latency, as a long one does, not a lower bandwidth.
func (p *Proxy) delayed(dst, src net.Conn) {
	type chunk struct {
		b   []byte
		due time.Time
	}
	queue := make(chan chunk, 1024)
	go func() {
		defer close(queue)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{bytes.Clone(buf[:n]), time.Now().Add(time.Duration(p.latency.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			src.Close() // ends the reader, which closes the queue
			for range queue {
			}
			return
		}
	}
}

// reset drops every forwarded connection with a reset, not an orderly
// close; p.mu is held.
func (p *Proxy) reset() {
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
}

// Pause stops listening and resets every forwarded connection: until
// Resume, connecting is refused, as when the server is down.
func (p *Proxy) Pause() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil || p.closed {
		return nil
	}
	err := p.ln.Close()
	p.ln = nil
	p.reset()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Resume listens again on the same address.
func (p *Proxy) Resume() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil || p.closed {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.ln = ln
	p.wg.Add(1)
	go p.accept(ln)
	return nil
}

// SetTarget sends new connections to target and resets the forwarded
// ones: the address now reaches another server, as after a failover.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
	p.reset()
}

// Close stops listening and resets every forwarded connection. It is safe
// to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	var err error
	if p.ln != nil {
		err = p.ln.Close()
	}
	p.reset()
	p.mu.Unlock()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
