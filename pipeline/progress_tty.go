package pipeline

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// TerminalProgress is a live multi-line display: one bar per entity with
// rows read against the estimate, items written, rate and ETA.
type TerminalProgress struct {
	p    *mpb.Progress
	bars map[string]*mpb.Bar
	// mu guards last, which mpb's render goroutine reads.
	mu   sync.Mutex
	last map[string]EntityProgress
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
	for _, e := range s.Entities {
		t.mu.Lock()
		t.last[e.Entity] = e
		t.mu.Unlock()
		b := t.bars[e.Entity]
		if b == nil {
			name := e.Entity
			b = t.p.AddBar(max(e.Estimate, 0),
				mpb.PrependDecorators(decor.Name(name, decor.WCSyncSpaceR)),
				mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return t.line(name) }, decor.WCSyncSpace)),
			)
			t.bars[e.Entity] = b
		}
		total := e.Estimate
		if total < e.RowsRead {
			total = e.RowsRead
		}
		b.SetTotal(total, s.Final)
		b.SetCurrent(e.RowsRead)
	}
}

func (t *TerminalProgress) line(name string) string {
	t.mu.Lock()
	e := t.last[name]
	t.mu.Unlock()
	eta := "ETA —"
	if e.ETA >= 0 {
		eta = "ETA " + (time.Duration(e.ETA) * time.Second).String()
	}
	rows := fmt.Sprintf("%d rows", e.RowsRead)
	if e.Estimate > 0 {
		rows = fmt.Sprintf("%d/~%d rows", e.RowsRead, e.Estimate)
	}
	return fmt.Sprintf("%s  %d items  %.0f items/s  %d rejected  %s", rows, e.ItemsWritten, e.ItemsPerSec, e.Rejected, eta)
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
	t.p.Wait()
}
