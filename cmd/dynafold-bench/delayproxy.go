package main

import (
	"strings"
	"sync"
	"time"

	"github.com/dynafold/dynafold/internal/tcpproxy"
)

// delayProxies put a source's server at a distance (--source-rtt): sync's
// connections go through a proxy that delays what the server sends by the
// round trip, as a server in another availability zone is about 1 ms
// away, while the bench's own statements go straight to the server.
type delayProxies struct {
	rtt time.Duration
	mu  sync.Mutex
	// byServer maps a server's host:port to its proxy.
	byServer map[string]*tcpproxy.Proxy
}

func newDelayProxies(rtt time.Duration) *delayProxies {
	return &delayProxies{rtt: rtt, byServer: map[string]*tcpproxy.Proxy{}}
}

// route returns dsn with its server replaced by a proxy in front of it
// (dsn itself when no delay is asked for).
func (p *delayProxies) route(dsn string) (string, error) {
	if p == nil {
		return dsn, nil
	}
	server, err := dsnAddr(dsn)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	proxy := p.byServer[server]
	if proxy == nil {
		if proxy, err = tcpproxy.Start(server); err != nil {
			return "", err
		}
		proxy.SetLatency(p.rtt)
		p.byServer[server] = proxy
	}
	return strings.Replace(dsn, server, proxy.Addr(), 1), nil
}

func (p *delayProxies) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, proxy := range p.byServer {
		proxy.Close()
	}
}
