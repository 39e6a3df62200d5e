package drivers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dynafold/dynafold/internal/connerr"
	"github.com/dynafold/dynafold/retry"
	"github.com/dynafold/dynafold/source"
)

// OpenOptions tune OpenRetrying.
type OpenOptions struct {
	// MaxConns bounds the connections (0: the driver's default).
	MaxConns int
	// Attempts bounds the attempts to connect when the server cannot be
	// reached (default 5, about 7 seconds of backing off).
	Attempts int
	// Logger is told of each retry (at warn); nil discards.
	Logger *slog.Logger
	// Sleep waits between attempts (default retry.Sleep); tests replace it.
	Sleep func(context.Context, time.Duration) error
}

// ConnectError is a source that could not be opened, said plainly: one
// line per distinct cause, without the driver's repetitions (one per
// address tried, per TLS mode) or the TLS fallback in front of the cause.
type ConnectError struct {
	Engine string // PostgreSQL or MySQL
	Addr   string // host:port/database, no credentials
	Causes []string
	// Unreachable: every attempt failed to connect at all.
	Unreachable bool
	Attempts    int
	Elapsed     time.Duration
	Err         error
}

func (e *ConnectError) Error() string {
	if e.Unreachable {
		hint := ""
		if e.Attempts > 1 {
			hint = "set --source-attempts 1 to fail faster"
		}
		return connerr.Unreachable(e.Engine, e.Addr, strings.Join(e.Causes, "; "), e.Attempts, e.Elapsed, hint)
	}
	if len(e.Causes) == 1 {
		return fmt.Sprintf("cannot connect to %s at %s: %s", e.Engine, e.Addr, e.Causes[0])
	}
	return fmt.Sprintf("cannot connect to %s at %s:\n%s", e.Engine, e.Addr, strings.Join(e.Causes, "\n"))
}

func (e *ConnectError) Unwrap() error { return e.Err }

// OpenRetrying is Open that tries again, with backoff, while the server
// cannot be reached (refused, no route, timed out), logging each retry,
// and describes a final failure as a *ConnectError. A server that answers
// with an error (no such database, bad password) fails at once.
func OpenRetrying(ctx context.Context, dsn source.DSN, o OpenOptions) (source.Source, error) {
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	engine := map[string]string{"postgres": "PostgreSQL", "mysql": "MySQL"}[dsn.Driver()]
	addr := dsn.Identity()
	if _, rest, ok := strings.Cut(addr, "://"); ok {
		addr = rest
	}
	start := time.Now()
	attempt := 0
	var src source.Source
	err := retry.Do(ctx, o.policy(dsn, engine, addr), retry.Always, func(ctx context.Context) (bool, error) {
		attempt++
		var err error
		if src, err = Open(ctx, dsn, o.MaxConns); err == nil {
			return false, nil
		}
		if engine == "" || ctx.Err() != nil {
			return false, retry.Final(err)
		}
		if causes, reachable := describe(dsn, err); reachable {
			return false, retry.Final(&ConnectError{Engine: engine, Addr: addr, Causes: causes, Attempts: attempt, Elapsed: time.Since(start), Err: err})
		}
		return false, err
	})
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) {
		causes, _ := describe(dsn, ex.Err)
		return nil, &ConnectError{Engine: engine, Addr: addr, Causes: causes, Unreachable: true, Attempts: ex.Attempts, Elapsed: time.Since(start), Err: ex.Err}
	}
	if err != nil {
		return nil, err
	}
	return src, nil
}

// policy is how OpenRetrying and Reach wait for the server of engine at
// addr: the first retry after 500 ms, doubling to 8 s, logging each. No
// jitter: one waiter at a time, and the warning says how long it waits.
func (o OpenOptions) policy(dsn source.DSN, engine, addr string) retry.Policy {
	return retry.Policy{
		Attempts: o.Attempts,
		Backoff:  retry.Backoff{Base: 500 * time.Millisecond, Max: 8 * time.Second},
		Sleep:    o.Sleep,
		OnRetry: func(attempt int, err error, delay time.Duration) {
			causes, _ := describe(dsn, err)
			o.Logger.Warn(connerr.Retrying(engine, addr, strings.Join(causes, "; "), delay, attempt+1, o.Attempts),
				"attempt", attempt+1, "max_attempts", o.Attempts)
		},
	}
}

// describe turns a driver's connect error into its distinct causes, and
// says whether the server answered at all (reachable) or every attempt
// failed to connect. pgx joins one error per address and TLS mode tried;
// each is one leaf here.
func describe(dsn source.DSN, err error) (causes []string, reachable bool) {
	var leaves []error
	var walk func(error)
	walk = func(e error) {
		for cur := e; cur != nil; cur = errors.Unwrap(cur) {
			if j, ok := cur.(interface{ Unwrap() []error }); ok {
				for _, x := range j.Unwrap() {
					walk(x)
				}
				return
			}
		}
		leaves = append(leaves, e)
	}
	walk(err)
	seen := map[string]bool{}
	var tlsNoise []string
	for _, l := range leaves {
		var pg *pgconn.PgError
		var my *mysql.MySQLError
		var text string
		switch {
		case errors.As(l, &pg):
			text, reachable = pg.Severity+": "+pg.Message+" (SQLSTATE "+pg.Code+")", true
		case errors.As(l, &my):
			text, reachable = my.Error(), true
		case connerr.Is(l):
			text = connerr.Cause(l)
		case strings.Contains(l.Error(), "tls error"):
			// The server refused TLS under sslmode=prefer and pgx fell back
			// to plain text: not the cause of anything.
			tlsNoise = append(tlsNoise, dsn.Redact(l.Error()))
			continue
		default:
			text, reachable = l.Error(), true
		}
		text = dsn.Redact(text)
		if !seen[text] {
			seen[text] = true
			causes = append(causes, text)
		}
	}
	if len(causes) == 0 {
		causes, reachable = tlsNoise, true
	}
	return causes, reachable
}
