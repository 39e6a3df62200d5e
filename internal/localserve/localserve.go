// Package localserve runs the project's test servers (the no-op DynamoDB
// endpoint, the fault proxy) on loopback, for tests, benchmarks and their
// small commands.
package localserve

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Start serves h on a new listener on 127.0.0.1 with an OS-chosen port. It
// returns the base URL (http://127.0.0.1:PORT) and a function that closes the
// listener and every connection at once: in tests and benchmarks a graceful
// shutdown would wait out connections the client dialled but never used.
func Start(h http.Handler) (url string, stop func(), err error) {
	srv, url, done, err := serve(h, "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	return url, func() { _ = srv.Close(); <-done }, nil
}

// ListenAndServe serves h on addr until ctx is done, then shuts down
// gracefully for up to two seconds. ready, if not nil, is called with the
// base URL once the listener is open.
func ListenAndServe(ctx context.Context, h http.Handler, addr string, ready func(url string)) error {
	srv, url, done, err := serve(h, addr)
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

// ConnWatcher is a handler that wants to see connections change state (the
// no-op endpoint counts the connections clients open).
type ConnWatcher interface {
	ConnState(net.Conn, http.ConnState)
}

func serve(h http.Handler, addr string) (*http.Server, string, chan struct{}, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if w, ok := h.(ConnWatcher); ok {
		srv.ConnState = w.ConnState
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return srv, "http://" + ln.Addr().String(), done, nil
}
