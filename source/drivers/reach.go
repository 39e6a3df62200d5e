package drivers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/dynafold/dynafold/retry"
	"github.com/dynafold/dynafold/source"
)

// Reach waits, for all the readers of a run at once, for a source that
// stopped accepting connections in the middle of the run. Each reader
// reads its shard again after a broken connection on its own; but when
// the server is gone, every reader's reconnection is refused, and each
// would retry and warn on its own and fail with the driver's words. With
// Reach one reader at a time waits for the server, as OpenRetrying does
// at the start (the same backoff, attempts and warning per retry), the
// others wait behind it, and when it gives up every reader fails with the
// same *ConnectError.
type Reach struct {
	dsn    source.DSN
	o      OpenOptions
	engine string
	addr   string

	mu        sync.Mutex
	recovered time.Time // when a waiting reader last found the server
	down      error     // set once the server was given up on
}

// NewReach waits for the server of dsn; o.Attempts counts the failed read
// as the first attempt.
func NewReach(dsn source.DSN, o OpenOptions) *Reach {
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	addr := dsn.Identity()
	if _, rest, ok := strings.Cut(addr, "://"); ok {
		addr = rest
	}
	engine := map[string]string{"postgres": "PostgreSQL", "mysql": "MySQL"}[dsn.Driver()]
	return &Reach{dsn: dsn, o: o, engine: engine, addr: addr}
}

// Wait is called by a reader whose attempt failed to connect (err). It
// returns nil once the server accepts a connection again (read again
// then), or a *ConnectError when it still does not after the attempts
// allowed, or the context's error. Safe for concurrent use.
func (r *Reach) Wait(ctx context.Context, err error) error {
	failed := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.down != nil:
		return r.down
	case r.recovered.After(failed):
		return nil // another reader waited the outage out meanwhile
	}
	werr := retry.DoAfter(ctx, r.o.policy(r.dsn, r.engine, r.addr), retry.Always, err, func(ctx context.Context) (bool, error) {
		src, err := Open(ctx, r.dsn, 1)
		if err == nil {
			src.Close()
			r.recovered = time.Now()
			r.o.Logger.Info(fmt.Sprintf("%s at %s is reachable again", r.engine, r.addr))
			return false, nil
		}
		if ctx.Err() != nil {
			return false, retry.Final(ctx.Err())
		}
		if _, reachable := describe(r.dsn, err); reachable {
			// The server answers (with an error): the read tells what.
			r.recovered = time.Now()
			return false, nil
		}
		return false, err
	})
	var ex *retry.ExhaustedError
	if errors.As(werr, &ex) {
		causes, _ := describe(r.dsn, ex.Err)
		r.down = &ConnectError{Engine: r.engine, Addr: r.addr, Causes: causes, Unreachable: true, Attempts: ex.Attempts, Elapsed: time.Since(failed), Err: ex.Err}
		return r.down
	}
	return werr
}
