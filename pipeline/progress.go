package pipeline

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Progress shows a run's progress. Update is called about once a second
// from one goroutine, and a last time with Final set.
type Progress interface {
	Update(p Snapshot)
	// Close ends the display (waits for a terminal display to redraw).
	Close()
}

// Snapshot is the progress of a run at one moment.
type Snapshot struct {
	Final    bool             `json:"final"`
	Elapsed  float64          `json:"elapsed_seconds"`
	Entities []EntityProgress `json:"entities"`
}

// EntityProgress is one entity's progress.
type EntityProgress struct {
	Entity       string `json:"entity"`
	RowsRead     int64  `json:"rows_read"`
	ItemsWritten int64  `json:"items_written"`
	Rejected     int64  `json:"rejected"`
	// Estimate is the expected number of rows (-1 when unknown).
	Estimate    int64   `json:"rows_estimate"`
	ItemsPerSec float64 `json:"items_per_second"`
	// ETA is the estimated seconds left (-1 until it is known).
	ETA float64 `json:"eta_seconds"`
}

func (r *run) progress(final bool) Snapshot {
	s := Snapshot{Final: final, Elapsed: time.Since(r.started).Seconds()}
	for _, er := range r.order {
		st := er.stats
		p := EntityProgress{
			Entity:       er.plan.Name,
			RowsRead:     st.rowsRead.Load() + st.resumedRows,
			ItemsWritten: st.itemsWritten.Load() + st.resumedItems,
			Rejected:     st.rejected.Load() + st.skipped.Load(),
			Estimate:     st.estimate,
			ETA:          -1,
		}
		if secs := st.seconds(); secs > 0 {
			p.ItemsPerSec = float64(st.itemsWritten.Load()) / secs
			rowsPerSec := float64(st.rowsRead.Load()) / secs
			if st.estimate > 0 && rowsPerSec > 0 {
				p.ETA = max(float64(st.estimate-p.RowsRead)/rowsPerSec, 0)
			}
		}
		s.Entities = append(s.Entities, p)
	}
	return s
}

// JSONProgress writes a JSON status line every interval (and a last one at
// the end), for logs and CI where there is no terminal.
type JSONProgress struct {
	mu       sync.Mutex
	w        io.Writer
	interval time.Duration
	last     time.Time
}

// NewJSONProgress writes to w at most once per interval.
func NewJSONProgress(w io.Writer, interval time.Duration) *JSONProgress {
	return &JSONProgress{w: w, interval: interval, last: time.Now()}
}

// Update implements Progress.
func (j *JSONProgress) Update(p Snapshot) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !p.Final && time.Since(j.last) < j.interval {
		return
	}
	j.last = time.Now()
	line := struct {
		Time  time.Time `json:"time"`
		Event string    `json:"event"`
		Snapshot
	}{time.Now().UTC(), "progress", p}
	b, _ := json.Marshal(line)
	_, _ = j.w.Write(append(b, '\n'))
}

// Close implements Progress.
func (j *JSONProgress) Close() {}
