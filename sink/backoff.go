package sink

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff computes capped exponential delays with full jitter, so that
// writers throttled at the same moment do not retry in lock step.
type Backoff struct {
	Base time.Duration
	Max  time.Duration
	// Rand returns a number in [0, 1); tests replace it.
	Rand func() float64
}

// DefaultBackoff starts at 25 ms and stops growing at 5 s: DynamoDB
// throttling clears within seconds, and longer sleeps only idle a writer.
func DefaultBackoff() Backoff {
	return Backoff{Base: 25 * time.Millisecond, Max: 5 * time.Second, Rand: rand.Float64}
}

// Delay returns the wait before retry number attempt (0-based).
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.Base
	for i := 0; i < attempt && d < b.Max; i++ {
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

// Sleep waits d or until ctx is done, whichever comes first.
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
