package faultproxy

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Start serves p on a new listener on 127.0.0.1 with an OS-chosen port. It
// returns the proxy's base URL and a function that closes the listener and
// every connection at once.
func (p *Proxy) Start() (url string, stop func(), err error) {
	srv, url, done, err := serve(p, "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	return url, func() { _ = srv.Close(); <-done }, nil
}

// Start is New followed by (*Proxy).Start, for tests that only need the
// endpoint (GET StatsPath still reports the counters).
func Start(backendURL string, cfg Config) (url string, stop func(), err error) {
	p, err := New(backendURL, cfg)
	if err != nil {
		return "", nil, err
	}
	return p.Start()
}

// ListenAndServe serves p on addr until ctx is done, then shuts down
// gracefully for up to two seconds. ready, if not nil, is called with the
// base URL once the listener is open.
func (p *Proxy) ListenAndServe(ctx context.Context, addr string, ready func(url string)) error {
	srv, url, done, err := serve(p, addr)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(url)
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		_ = srv.Close()
	}
	<-done
	return nil
}

func serve(h http.Handler, addr string) (*http.Server, string, chan struct{}, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return srv, "http://" + ln.Addr().String(), done, nil
}
