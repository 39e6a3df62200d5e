package sink

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/dynafold/dynafold/retry"
)

// AdaptiveRate paces writes in write units per second. It starts at the
// cap (--max-wcu or the table's provisioned capacity), or unlimited, and
// adapts: on throttling it cuts the rate to three quarters of what the
// table took (the median of the last three seconds), at most once a second
// so that a burst of throttled writers does not collapse it; while writes
// succeed it raises the rate by 5% a second, never above the cap.
//
// Each cut is an experiment: unless the share of throttled requests over
// the second (and at least minJudged requests) after it has halved from
// the share before it (itself over at least minJudged requests), and by
// more than chance explains, the throttling was not caused by the rate (a
// partition split, a neighbour, a flaky path), so the cut is undone and
// the next one waits twice as long, up to maxCooldown; a cut that helped
// halves the wait. Without this a
// steady trickle of throttles unrelated to the rate would ratchet the rate
// down to minRate and stall the run.
type AdaptiveRate struct {
	mu  sync.Mutex
	max float64 // hard cap; 0 = none
	cur float64 // allowed now; +Inf = unlimited
	lim *rate.Limiter
	// now and sleep are the clock, replaceable so that tests simulate time.
	now       func() time.Time
	sleep     func(context.Context, time.Duration) error
	lastCut   time.Time
	lastRaise time.Time
	// meter: units acknowledged in the current second, and the rates of
	// the last full ones, latest first.
	winStart time.Time
	winUnits float64
	rates    [recentWindows]float64
	measured bool // a full second has closed
	cuts     int64
	// throttled share: requests acknowledged and throttled in the current
	// and the last full window (before a cut), or since the cut (after).
	ok, throttled           [2]int // [0]: current window, [1]: last window
	probing                 bool
	afterOK, afterThrottled int
	beforeCut               float64 // the rate before the pending cut
	shareCut                float64 // the throttled share that caused it
	nCut                    int     // over that many requests
	cooldown                time.Duration
	undone                  int64
}

const (
	minCooldown = time.Second
	maxCooldown = 30 * time.Second
	// a cut helped when the throttled share fell below this fraction of
	// the share that caused it.
	helpedBelow = 0.5
	// minJudged requests since the cut, and a second, make it worth
	// judging: fewer would let chance keep a useless cut.
	minJudged = 20
	// zHelped standard errors: how far the throttled share must fall for
	// a cut to be kept.
	zHelped = 2
	// maxProbe bounds an experiment whose outcome stays unclear; it is
	// then undone.
	maxProbe = 10 * time.Second
)

// minRate keeps a throttled writer moving: 25 units per second.
const minRate = 25

// NewAdaptiveRate returns a limiter capped at max units per second (0: no
// cap).
func NewAdaptiveRate(max float64) *AdaptiveRate { return newAdaptiveRate(max, time.Now) }

func newAdaptiveRate(max float64, now func() time.Time) *AdaptiveRate {
	a := &AdaptiveRate{max: max, cur: math.Inf(1), now: now, sleep: retry.Sleep}
	if max > 0 {
		a.cur = max
	}
	a.lim = rate.NewLimiter(rate.Limit(a.cur), burstFor(a.cur))
	t := a.now()
	a.winStart, a.lastCut, a.lastRaise = t, t.Add(-time.Hour), t
	a.cooldown = minCooldown
	return a
}

// burstFor allows a tenth of a second of writes at once, so the pace is
// smooth yet a 25-item batch of large items is never starved.
func burstFor(r float64) int {
	if math.IsInf(r, 1) {
		return math.MaxInt32
	}
	return max(int(r/10), 10)
}

// Wait blocks until units may be written or ctx is done.
func (a *AdaptiveRate) Wait(ctx context.Context, units int) error {
	for units > 0 {
		a.mu.Lock()
		lim, unlimited := a.lim, math.IsInf(a.cur, 1)
		a.mu.Unlock()
		if unlimited {
			break
		}
		now := a.now()
		n := min(units, lim.Burst())
		r := lim.ReserveN(now, n)
		if !r.OK() {
			continue // the burst shrank since it was read: read it again
		}
		if err := a.sleep(ctx, r.DelayFrom(now)); err != nil {
			r.CancelAt(a.now())
			return err
		}
		units -= n
	}
	return ctx.Err()
}

// Succeeded records units acknowledged by the table.
func (a *AdaptiveRate) Succeeded(units int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.now()
	a.tick(t)
	a.winUnits += float64(units)
	a.ok[0]++
	if a.probing {
		a.afterOK++
		a.judge(t)
	}
	if t.Sub(a.lastCut) > 2*time.Second && t.Sub(a.lastRaise) >= time.Second && !math.IsInf(a.cur, 1) {
		next := a.cur + max(a.cur*0.05, minRate)
		if a.max > 0 && next > a.max {
			next = a.max
		}
		a.set(next)
		a.lastRaise = t
	}
}

// Throttled records a throttled request.
func (a *AdaptiveRate) Throttled() {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.now()
	a.tick(t)
	a.throttled[0]++
	if a.probing {
		a.afterThrottled++
		a.judge(t)
		return
	}
	if t.Sub(a.lastCut) < a.cooldown {
		return
	}
	// A cut is judged against the throttled share that caused it, so that
	// share must rest on minJudged requests too. Without this the first
	// throttled answer of a run (answered faster than the writes around it)
	// was a share of 100%: any later share "halved" it, so a cut to a
	// guessed rate was kept, and at the low rate every later experiment
	// was judged on a handful of requests and ratcheted the rate down.
	if a.ok[0]+a.ok[1]+a.throttled[0]+a.throttled[1] < minJudged {
		return
	}
	// Nor before a second has been measured: the first fraction of a run
	// measures how fast the source starts, not what the table takes, and a
	// cut from it starts the run at a fraction of its pace.
	if !a.measured {
		return
	}
	// Cut from what is really getting through when that is known: a rate
	// the table could never reach says nothing about what it can take.
	base := a.cur
	if observed, ok := a.observed(); ok && observed < base {
		base = observed
	}
	if math.IsInf(base, 1) {
		base = unknownStart
	}
	a.probing, a.afterOK, a.afterThrottled = true, 0, 0
	a.beforeCut = a.cur
	a.nCut = a.ok[0] + a.ok[1] + a.throttled[0] + a.throttled[1]
	a.shareCut = share(a.ok[0]+a.ok[1], a.throttled[0]+a.throttled[1])
	a.set(max(base*0.75, minRate))
	a.lastCut = t
	a.cuts++
}

func share(ok, throttled int) float64 {
	if n := ok + throttled; n > 0 {
		return float64(throttled) / float64(n)
	}
	return 0
}

// judge decides the pending experiment once a second and minJudged
// requests have passed since the cut: keep the cut if the throttled share
// fell to half and by more than chance explains, undo it if not. A share
// that fell, but by too few requests to tell, is probed further, for up to
// maxProbe.
func (a *AdaptiveRate) judge(t time.Time) {
	if t.Sub(a.lastCut) < time.Second || a.afterOK+a.afterThrottled < minJudged {
		return
	}
	after := share(a.afterOK, a.afterThrottled)
	fell := after < a.shareCut*helpedBelow
	switch {
	case fell && fellBeyondChance(a.shareCut, a.nCut, after, a.afterOK+a.afterThrottled):
		a.probing = false
		// One success by chance must not undo many failures: halve.
		a.cooldown = max(a.cooldown/2, minCooldown)
	case fell && t.Sub(a.lastCut) < maxProbe:
		// Too few requests to tell: probe on.
	default:
		a.probing = false
		a.set(a.beforeCut)
		a.undone++
		a.cooldown = min(2*a.cooldown, maxCooldown)
	}
}

// fellBeyondChance reports whether a throttled share p2 over n2 requests
// is below p1 over n1 by more than zHelped standard errors of the
// difference (a pooled two-proportion test). Twenty requests at a 10%
// share halve it by chance often; kept, such a cut is paid for at 5% a
// second for many seconds.
func fellBeyondChance(p1 float64, n1 int, p2 float64, n2 int) bool {
	p := (p1*float64(n1) + p2*float64(n2)) / float64(n1+n2)
	se := math.Sqrt(p * (1 - p) * (1/float64(n1) + 1/float64(n2)))
	return p1-p2 > zHelped*se
}

// Cuts counts the cuts of the rate.
func (a *AdaptiveRate) Cuts() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cuts
}

// Undone counts cuts undone because they did not lower the throttling.
func (a *AdaptiveRate) Undone() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.undone
}

// Current returns the allowed rate (+Inf when unlimited).
func (a *AdaptiveRate) Current() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur
}

// tick rolls the one-second meter window. The throttled share's window
// rolls with it once it holds minJudged requests, so that at a low rate it
// covers as many seconds as that takes.
func (a *AdaptiveRate) tick(t time.Time) {
	if el := t.Sub(a.winStart); el >= time.Second {
		a.measured = true
		copy(a.rates[1:], a.rates[:])
		a.rates[0] = a.winUnits / el.Seconds()
		a.winStart, a.winUnits = t, 0
		if a.ok[0]+a.throttled[0] >= minJudged {
			a.ok[1], a.throttled[1] = a.ok[0], a.throttled[0]
			a.ok[0], a.throttled[0] = 0, 0
		}
	}
}

// unknownStart is where an unlimited writer that is throttled before any
// write was acknowledged starts from: one partition's worth.
const unknownStart = 1000

// recentWindows is how many full seconds the cut's base looks back on.
const recentWindows = 3

// observed is the acknowledged rate: the median of the last recentWindows
// full seconds (the higher middle one of two); ok is false while nothing
// has been acknowledged in them. Not the last second
// alone: one in which the writers sat in backoff, or the source or the
// machine paused, says nothing about what the table can take (cut from
// it, the rate fell to a few units a second and stayed there until enough
// requests trickled in to judge the cut), and neither does one in which
// the table spent burst capacity.
func (a *AdaptiveRate) observed() (float64, bool) {
	var recent []float64
	for _, r := range a.rates {
		if r > 0 {
			recent = append(recent, r)
		}
	}
	if len(recent) == 0 {
		return 0, false
	}
	slices.Sort(recent)
	return recent[len(recent)/2], true
}

// set changes the allowed rate. An unlimited rate bypasses the limiter;
// leaving it starts a limiter afresh, with a full burst.
func (a *AdaptiveRate) set(r float64) {
	was := a.cur
	a.cur = r
	switch {
	case math.IsInf(r, 1):
	case math.IsInf(was, 1):
		a.lim = rate.NewLimiter(rate.Limit(r), burstFor(r))
	default:
		t := a.now()
		a.lim.SetLimitAt(t, rate.Limit(r))
		a.lim.SetBurstAt(t, burstFor(r))
	}
}
