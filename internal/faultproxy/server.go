package faultproxy

import (
	"context"

	"github.com/dynafold/dynafold/internal/localserve"
)

// Start serves p on loopback with an OS-chosen port and returns the
// proxy's base URL and a function that stops it at once.
func (p *Proxy) Start() (url string, stop func(), err error) { return localserve.Start(p) }

// Start is New followed by (*Proxy).Start, for tests that only need the
// endpoint (GET StatsPath still reports the counters).
func Start(backendURL string, cfg Config) (url string, stop func(), err error) {
	p, err := New(backendURL, cfg)
	if err != nil {
		return "", nil, err
	}
	return p.Start()
}

// ListenAndServe serves p on addr until ctx is done (see
// localserve.ListenAndServe).
func (p *Proxy) ListenAndServe(ctx context.Context, addr string, ready func(url string)) error {
	return localserve.ListenAndServe(ctx, p, addr, ready)
}
