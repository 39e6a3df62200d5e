// Package retry is the one way dynafold tries work again after failures
// that pass: DynamoDB throttling and unprocessed items, a lost source
// connection, an endpoint that stopped accepting connections. It holds the
// backoff (capped, exponential, jittered), the loop that counts attempts
// and gives up, and a sleep that ends when the context does. What an error
// means is the caller's to say, with a classification hook.
package retry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff computes capped exponential delays, with jitter so that callers
// failing at the same moment do not retry in lock step.
type Backoff struct {
	// Base is the delay before the first retry, Max the most any grows to.
	Base time.Duration
	Max  time.Duration
	// Rand returns the fraction of the delay to wait, in [0, 1]:
	// FullJitter or EqualJitter; tests replace it. Nil waits the whole
	// delay, for waits that are logged with their length and have only
	// one waiter (see drivers.Reach).
	Rand func() float64
}

// FullJitter waits between none and all of the delay: callers throttled
// together spread out the most ("Exponential Backoff And Jitter", AWS
// Architecture Blog, 2015).
func FullJitter() float64 { return rand.Float64() }

// EqualJitter waits between half and all of the delay: spread out, yet
// never much sooner than the delay says.
func EqualJitter() float64 { return 0.5 + rand.Float64()/2 }

// Delay returns the wait before retry number retry (0-based): Base
// doubled retry times, at most Max, times Rand.
func (b Backoff) Delay(retry int) time.Duration {
	d := b.Base
	for i := 0; i < retry && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	r := 1.0
	if b.Rand != nil {
		r = b.Rand()
	}
	return time.Duration(float64(d) * r)
}

// Sleep waits d or until ctx is done, whichever comes first; it returns
// ctx's error in the second case.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Class is what Do does about an attempt that failed.
type Class int

const (
	// Fatal: Do returns the error.
	Fatal Class = iota
	// Retry: Do backs off, then tries again.
	Retry
	// Now: Do tries again at once, counting the attempt; the wait was
	// the caller's (see Waited).
	Now
)

// Always classifies every error as Retry: for work that says itself,
// with Final, which of its errors end it.
func Always(error) Class { return Retry }

// If classifies the errors retryable says yes to as Retry, the others as
// Fatal.
func If(retryable func(error) bool) func(error) Class {
	return func(err error) Class {
		if retryable(err) {
			return Retry
		}
		return Fatal
	}
}

// Final marks an error of fn as the end of Do, whatever the
// classification hook would say of it (a result of work that retried on
// its own, an error already turned into what the caller returns). Do
// returns err itself. Final(nil) is nil.
func Final(err error) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, class: Fatal}
}

// Waited marks an error of fn after which the caller has waited already
// (for an endpoint to accept connections again): Do tries again at once,
// without backing off, but counts the attempt.
func Waited(err error) error { return &marked{err: err, class: Now} }

// marked is an error whose class fn has decided.
type marked struct {
	err   error
	class Class
}

func (m *marked) Error() string { return m.err.Error() }
func (m *marked) Unwrap() error { return m.err }

// Policy says how often and how long Do retries.
type Policy struct {
	// Attempts bounds a run of attempts that leave work undone: the run
	// starts with the first attempt, or with the last one that made
	// progress, and Do gives up with an *ExhaustedError at its
	// Attempts-th attempt. 0: no bound.
	Attempts int
	Backoff  Backoff
	// Delay, when set, replaces Backoff: the wait after attempt number
	// attempt (1-based) failed with err, for delays someone else computes
	// (the AWS SDK's retryer, which logs each). An error from it ends Do
	// with the attempt's error.
	Delay func(attempt int, err error) (time.Duration, error)
	// Sleep waits between attempts (default Sleep); tests replace it.
	Sleep func(context.Context, time.Duration) error
	// OnRetry, when set, is told before each wait how many attempts
	// failed in a row, the last one's error and how long Do waits.
	OnRetry func(attempt int, err error, delay time.Duration)
}

// ExhaustedError is work given up on after Policy.Attempts attempts.
type ExhaustedError struct {
	Attempts int
	// Err is the last attempt's error.
	Err error
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("giving up after %d attempts: %v", e.Attempts, e.Err)
}

func (e *ExhaustedError) Unwrap() error { return e.Err }

// Func is one attempt. It returns nil when the work is done, or the
// error that stopped it and whether it got part of the work done
// (progress: DynamoDB took some of a batch), which starts the count of
// attempts again.
type Func func(ctx context.Context) (progress bool, err error)

// Do calls fn until it returns nil, or an error that classify (or Final)
// calls Fatal, or Policy.Attempts attempts in a row made no progress
// (*ExhaustedError), or ctx is done during a wait (ctx's error). Between
// attempts it waits Backoff.Delay(n-1) after n attempts in a row failed.
func Do(ctx context.Context, p Policy, classify func(error) Class, fn Func) error {
	progress, err := fn(ctx)
	return again(ctx, p, classify, fn, progress, err)
}

// DoAfter is Do for work whose first attempt has failed already, with
// err: it classifies err and, unless it is fatal, waits and calls fn for
// the second attempt.
func DoAfter(ctx context.Context, p Policy, classify func(error) Class, err error, fn Func) error {
	return again(ctx, p, classify, fn, false, err)
}

func again(ctx context.Context, p Policy, classify func(error) Class, fn Func, progress bool, err error) error {
	if p.Sleep == nil {
		p.Sleep = Sleep
	}
	n := 0 // attempts since work was last done in part
	for err != nil {
		var class Class
		if m, ok := err.(*marked); ok {
			class, err = m.class, m.err
		} else {
			class = classify(err)
		}
		if class == Fatal {
			return err
		}
		if progress {
			n = 1
		} else if n++; p.Attempts > 0 && n >= p.Attempts {
			return &ExhaustedError{Attempts: n, Err: err}
		}
		if class == Retry {
			d := p.Backoff.Delay(n - 1)
			if p.Delay != nil {
				var derr error
				if d, derr = p.Delay(n, err); derr != nil {
					return err
				}
			}
			if p.OnRetry != nil {
				p.OnRetry(n, err, d)
			}
			if serr := p.Sleep(ctx, d); serr != nil {
				return serr
			}
		}
		progress, err = fn(ctx)
	}
	return nil
}
