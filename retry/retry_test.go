package retry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Base: 25 * time.Millisecond, Max: 5 * time.Second}
	for _, tt := range []struct {
		retry int
		want  time.Duration
	}{
		{0, 25 * time.Millisecond},
		{1, 50 * time.Millisecond},
		{7, 3200 * time.Millisecond},
		{8, 5 * time.Second},  // 6.4 s, capped
		{60, 5 * time.Second}, // no overflow
	} {
		require.Equal(t, tt.want, b.Delay(tt.retry), "retry %d", tt.retry)
	}
}

func TestJitterBounds(t *testing.T) {
	for _, tt := range []struct {
		name     string
		rand     func() float64
		min, max time.Duration // inclusive
	}{
		{"full", FullJitter, 0, time.Second},
		{"equal", EqualJitter, 500 * time.Millisecond, time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := Backoff{Base: time.Second, Max: time.Second, Rand: tt.rand}
			for range 1000 {
				d := b.Delay(3)
				require.GreaterOrEqual(t, d, tt.min)
				require.LessOrEqual(t, d, tt.max)
			}
		})
	}
}

var (
	errPassing = errors.New("passing")
	errBroken  = errors.New("broken")
	classify   = If(func(err error) bool { return errors.Is(err, errPassing) })
)

// recorder is a Policy whose waits are recorded instead of slept.
type recorder struct{ waits []time.Duration }

func (r *recorder) policy(attempts int) Policy {
	return Policy{Attempts: attempts, Backoff: Backoff{Base: time.Millisecond, Max: 8 * time.Millisecond},
		Sleep: func(ctx context.Context, d time.Duration) error { r.waits = append(r.waits, d); return ctx.Err() }}
}

// script is a Func answering with each outcome in turn.
type outcome struct {
	progress bool
	err      error
}

func script(calls *int, outs ...outcome) Func {
	return func(context.Context) (bool, error) {
		o := outs[*calls]
		*calls++
		return o.progress, o.err
	}
}

func TestDo(t *testing.T) {
	fail := outcome{err: errPassing}
	some := outcome{progress: true, err: errPassing}
	ms := time.Millisecond
	for _, tt := range []struct {
		name     string
		attempts int
		outs     []outcome
		calls    int
		waits    []time.Duration
		err      string
	}{
		{"done at once", 3, []outcome{{}}, 1, nil, ""},
		{"passing errors retried", 3, []outcome{fail, fail, {}}, 3, []time.Duration{1 * ms, 2 * ms}, ""},
		{"fatal error returned", 3, []outcome{fail, {err: errBroken}}, 2, []time.Duration{1 * ms}, "broken"},
		{"final error returned", 3, []outcome{{err: Final(errPassing)}}, 1, nil, "passing"},
		{"attempts exhausted", 3, []outcome{fail, fail, fail}, 3, []time.Duration{1 * ms, 2 * ms}, "giving up after 3 attempts: passing"},
		// Progress counts as the first attempt of a new run of failures.
		{"progress starts the count again", 3, []outcome{fail, fail, some, fail, fail}, 5, []time.Duration{1 * ms, 2 * ms, 1 * ms, 2 * ms}, "giving up after 3 attempts: passing"},
		{"waited: at once, counted", 3, []outcome{{err: Waited(errPassing)}, fail, fail}, 3, []time.Duration{2 * ms}, "giving up after 3 attempts: passing"},
		{"no bound", 0, []outcome{fail, fail, fail, fail, fail, {}}, 6, []time.Duration{1 * ms, 2 * ms, 4 * ms, 8 * ms, 8 * ms}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r recorder
			calls := 0
			err := Do(context.Background(), r.policy(tt.attempts), classify, script(&calls, tt.outs...))
			require.Equal(t, tt.calls, calls)
			require.Equal(t, tt.waits, r.waits)
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.err)
		})
	}
}

func TestDoExhaustedErrorHoldsTheLastError(t *testing.T) {
	var r recorder
	calls := 0
	last := errors.Join(errPassing, errors.New("third"))
	err := Do(context.Background(), r.policy(3), classify, script(&calls, outcome{err: errPassing}, outcome{err: errPassing}, outcome{err: last}))
	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex)
	require.Equal(t, 3, ex.Attempts)
	require.Same(t, last, ex.Err)
	require.ErrorIs(t, err, errPassing)
}

func TestDoAfter(t *testing.T) {
	t.Run("the failed attempt counts and is waited after", func(t *testing.T) {
		var r recorder
		calls := 0
		err := DoAfter(context.Background(), r.policy(3), classify, errPassing, script(&calls, outcome{err: errPassing}, outcome{err: errPassing}))
		require.EqualError(t, err, "giving up after 3 attempts: passing")
		require.Equal(t, 2, calls)
		require.Equal(t, []time.Duration{time.Millisecond, 2 * time.Millisecond}, r.waits)
	})
	t.Run("one attempt allowed: no wait", func(t *testing.T) {
		var r recorder
		err := DoAfter(context.Background(), r.policy(1), classify, errPassing, nil)
		var ex *ExhaustedError
		require.ErrorAs(t, err, &ex)
		require.Equal(t, 1, ex.Attempts)
		require.Empty(t, r.waits)
	})
}

func TestDoDelayAndOnRetry(t *testing.T) {
	var r recorder
	p := r.policy(3)
	p.Delay = func(attempt int, err error) (time.Duration, error) { return time.Duration(attempt) * time.Second, nil }
	type retried struct {
		attempt int
		delay   time.Duration
	}
	var told []retried
	p.OnRetry = func(attempt int, err error, d time.Duration) { told = append(told, retried{attempt, d}) }
	calls := 0
	err := Do(context.Background(), p, classify, script(&calls, outcome{err: errPassing}, outcome{err: errPassing}, outcome{}))
	require.NoError(t, err)
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second}, r.waits)
	require.Equal(t, []retried{{1, time.Second}, {2, 2 * time.Second}}, told)

	p.Delay = func(int, error) (time.Duration, error) { return 0, errors.New("no more") }
	calls = 0
	err = Do(context.Background(), p, classify, script(&calls, outcome{err: errPassing}))
	require.Equal(t, errPassing, err, "a delay refused ends with the attempt's error")
}

// A wait ends when the context does: Do returns the context's error
// without another attempt.
func TestDoCanceledDuringSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	p := Policy{Attempts: 5, Backoff: Backoff{Base: time.Hour, Max: time.Hour}}
	err := Do(ctx, p, classify, func(context.Context) (bool, error) {
		calls++
		cancel()
		return false, errPassing
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, calls)
}

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, Sleep(ctx, time.Hour), context.Canceled, "a done context ends the wait")
	require.ErrorIs(t, Sleep(ctx, 0), context.Canceled)
	require.NoError(t, Sleep(context.Background(), time.Microsecond))
	require.NoError(t, Sleep(context.Background(), 0))
}
