package pipeline

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dynafold/dynafold/internal/render"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// TerminalProgress is a live multi-line display: one bar per entity with
// items acknowledged by DynamoDB against the estimate, rows read, rate and
// ETA, and a last line for the writes: write units
// per second, throttled requests and the active rate cap.
type TerminalProgress struct {
	p      *mpb.Progress
	bars   map[string]*mpb.Bar
	writes *mpb.Bar
	// statusMu guards status, made by the first ShowStatus (apart from mu:
	// making a bar waits for mpb, whose render goroutine takes mu).
	statusMu sync.Mutex
	status   *mpb.Bar
	// mu guards last, lastSnap and statusLine, which mpb's render
	// goroutine reads.
	mu         sync.Mutex
	last       map[string]EntityProgress
	lastSnap   Snapshot
	statusLine string
}

// NewTerminalProgress draws on w, which should be a terminal.
func NewTerminalProgress(w io.Writer) *TerminalProgress {
	return &TerminalProgress{
		p:    mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithWidth(32)),
		bars: map[string]*mpb.Bar{},
		last: map[string]EntityProgress{},
	}
}

// Update implements Progress.
func (t *TerminalProgress) Update(s Snapshot) {
	t.mu.Lock()
	t.lastSnap = s
	t.mu.Unlock()
	for _, e := range s.Entities {
		t.mu.Lock()
		t.last[e.Entity] = e
		t.mu.Unlock()
		b := t.bars[e.Entity]
		if b == nil {
			name := e.Entity
			b = t.p.AddBar(max(e.ItemsEstimate, 0),
				mpb.PrependDecorators(decor.Name(name, decor.WCSyncSpaceR)),
				mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return t.line(name) }, decor.WCSyncSpace)),
			)
			t.bars[e.Entity] = b
		}
		total := max(e.ItemsEstimate, e.ItemsWritten)
		// Full only when every expected item is acknowledged: an
		// interrupted run's bars stay where they stopped.
		b.SetTotal(total, s.Final && e.ItemsWritten >= total)
		b.SetCurrent(e.ItemsWritten)
	}
	if t.writes == nil {
		t.writes = t.p.New(0, mpb.NopStyle(), mpb.BarPriority(1<<30),
			mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return t.writesLine() })))
	}
	if s.Final {
		t.writes.SetTotal(-1, true)
	}
}

func (t *TerminalProgress) line(name string) string {
	t.mu.Lock()
	e := t.last[name]
	t.mu.Unlock()
	eta := "ETA —"
	if e.ETA >= 0 {
		eta = "ETA " + render.Seconds(e.ETA)
	}
	items := render.Thousands(e.ItemsWritten) + " items written"
	if e.ItemsEstimate > 0 {
		items = render.Thousands(e.ItemsWritten) + "/~" + render.Thousands(e.ItemsEstimate) + " items written"
	}
	rows := render.Thousands(e.RowsRead) + " rows read"
	if e.Estimate > 0 {
		rows = render.Thousands(e.RowsRead) + "/~" + render.Thousands(e.Estimate) + " rows read"
	}
	if e.ResumedRows > 0 {
		// Resumed: the counts are of the whole migration; say so.
		rows += " (whole migration, " + render.Thousands(e.ResumedRows) + " rows by earlier runs)"
	}
	return fmt.Sprintf("%s  %s  %s items/s  %s rejected  %s", items, rows, render.ThousandsF(e.ItemsPerSec), render.Thousands(e.Rejected), eta)
}

func (t *TerminalProgress) writesLine() string {
	t.mu.Lock()
	s := t.lastSnap
	t.mu.Unlock()
	limit := "no rate cap"
	if s.RateCap > 0 {
		limit = "rate cap " + render.ThousandsF(s.RateCap) + " WCU/s"
	}
	return fmt.Sprintf("writes: %s WCU/s  %s throttled requests  %s", render.ThousandsF(s.WCUPerSec), render.Thousands(s.Throttled), limit)
}

// ShowStatus implements StatusDisplay: s.Line as the last line, redrawn
// in place.
func (t *TerminalProgress) ShowStatus(s Status) {
	t.mu.Lock()
	t.statusLine = s.Line
	t.mu.Unlock()
	t.statusMu.Lock()
	defer t.statusMu.Unlock()
	if t.status == nil {
		t.status = t.p.New(0, mpb.NopStyle(), mpb.BarPriority(1<<30+1),
			mpb.PrependDecorators(decor.Any(func(decor.Statistics) string {
				t.mu.Lock()
				defer t.mu.Unlock()
				return t.statusLine
			})))
	}
}

// Writer prints whole lines above the bars, so that log lines and
// messages are not covered by the next redraw. It fails once the display
// is closed.
func (t *TerminalProgress) Writer() io.Writer { return t.p }

// Close implements Progress.
func (t *TerminalProgress) Close() {
	for _, b := range t.bars {
		if !b.Completed() {
			b.Abort(false)
		}
	}
	t.statusMu.Lock()
	status := t.status
	t.statusMu.Unlock()
	for _, b := range []*mpb.Bar{t.writes, status} {
		if b != nil && !b.Completed() {
			b.Abort(false)
		}
	}
	t.p.Wait()
}
