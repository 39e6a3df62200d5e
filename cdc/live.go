package cdc

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynafold/dynafold/source"
)

// Live is what a monitor reads of a running sync, at any moment and from
// any goroutine (a scrape of the metrics): its lag in seconds and in bytes
// of the source's log. The engine keeps it current; pass one in
// Options.Live to read it.
type Live struct {
	mu sync.Mutex
	// oldest is the commit time of the oldest change received and not yet
	// applied (zero: none); synced the last moment sync knew it had
	// applied everything the source had committed; streaming whether the
	// change stream is open.
	oldest, synced time.Time
	streaming      bool

	open      atomic.Pointer[streamRef]
	confirmed atomic.Pointer[source.Position]
	written   atomic.Pointer[written]
}

// NewLive returns a Live whose lag counts from now.
func NewLive() *Live { return &Live{synced: time.Now()} }

// LagSeconds is now minus the commit time of the oldest change not yet
// applied, and 0 when caught up. While sync reads nothing (the source or
// DynamoDB is away, the initial load runs) it counts from the last moment
// sync was known to be caught up, so it keeps growing while sync is
// stalled instead of freezing.
func (l *Live) LagSeconds() float64 { return l.seconds(time.Now()) }

func (l *Live) seconds(now time.Time) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !l.oldest.IsZero():
		return max(now.Sub(l.oldest).Seconds(), 0)
	case l.streaming:
		return 0
	}
	return max(now.Sub(l.synced).Seconds(), 0)
}

// BehindBytes is the log between the confirmed position and the latest
// end the change stream reported; 0 while no stream is open.
func (l *Live) BehindBytes() int64 {
	ref, pos := l.open.Load(), l.confirmed.Load()
	if ref == nil || pos == nil {
		return 0
	}
	return ref.changes.Distance(*pos, ref.st.ServerEnd())
}

// pending records a transaction received, not yet applied.
func (l *Live) pending(commit time.Time) {
	l.mu.Lock()
	if l.oldest.IsZero() || commit.Before(l.oldest) {
		l.oldest = commit
	}
	l.mu.Unlock()
}

// applied records that every transaction received is applied.
func (l *Live) applied() {
	l.mu.Lock()
	l.oldest = time.Time{}
	l.mu.Unlock()
}

// caughtUp records that the source reported nothing more to apply: every
// transaction received is applied (whatever backlog was assumed).
func (l *Live) caughtUp(at time.Time) {
	l.mu.Lock()
	l.oldest = time.Time{}
	l.synced = at
	l.mu.Unlock()
}

// setStreaming records whether the change stream is open; while it is
// not, the lag grows from the last moment sync was caught up.
func (l *Live) setStreaming(on bool) {
	l.mu.Lock()
	if l.streaming && !on && l.oldest.IsZero() {
		// Caught up as far as sync knows, until now.
		l.synced = time.Now()
	}
	l.streaming = on
	l.mu.Unlock()
}

// statusNote is the fault the status line reports, set by the engine and
// read when the status is printed.
type statusNote struct {
	mu    sync.Mutex
	fault string
}

func (n *statusNote) setFault(s string) {
	n.mu.Lock()
	n.fault = s
	n.mu.Unlock()
}

func (n *statusNote) get() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fault
}
