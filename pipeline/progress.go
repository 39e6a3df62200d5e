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
	// WCUPerSec is the write units acknowledged per second since the last
	// snapshot; Throttled counts throttled requests so far (this run);
	// RateCap is the write rate the writer holds to now, 0 when none.
	WCUPerSec float64 `json:"wcu_per_second"`
	Throttled int64   `json:"throttled_requests"`
	RateCap   float64 `json:"rate_cap_wcu"`
}

// EntityProgress is one entity's progress. Counts are of the whole
// migration (earlier, resumed runs included) unless named "this run".
type EntityProgress struct {
	Entity string `json:"entity"`
	// RowsDone is rows whose items DynamoDB has all acknowledged (as the
	// checkpoint holds them): what the bar and the ETA are based on.
	RowsDone int64 `json:"rows_done"`
	// RowsRead is rows read, some of them still being written.
	RowsRead int64 `json:"rows_read"`
	// ResumedRows is rows done by earlier runs of the checkpoint.
	ResumedRows int64 `json:"resumed_rows"`
	// ItemsWritten is items DynamoDB has acknowledged: what the bar and
	// the ETA are based on.
	ItemsWritten int64 `json:"items_written"`
	// ItemsEstimate is the expected number of items: the rows estimate
	// times the items per row built so far, and never less than the items
	// built (-1 when unknown).
	ItemsEstimate int64 `json:"items_estimate"`
	Rejected      int64 `json:"rejected"`
	// Estimate is the expected number of rows (-1 when unknown).
	Estimate int64 `json:"rows_estimate"`
	// ItemsPerSec is items acknowledged per second, this run.
	ItemsPerSec float64 `json:"items_per_second"`
	// ETA is the estimated seconds left, from the items still to be
	// acknowledged and the rate at which they are this run (-1 until it is
	// known).
	ETA float64 `json:"eta_seconds"`
}

// progressMeter remembers the last snapshot's write units, for WCU/s.
type progressMeter struct {
	units int64
	at    time.Time
}

// progress is called from the run's coordinating goroutine only.
func (r *run) progress(final bool) Snapshot {
	now := time.Now()
	s := Snapshot{Final: final, Elapsed: now.Sub(r.started).Seconds()}
	done := map[string]int64{}
	for _, sh := range r.job.Store.Shards() {
		done[sh.Entity] += sh.Rows
	}
	for _, er := range r.order {
		st := er.stats
		p := EntityProgress{
			Entity:       er.plan.Name,
			RowsDone:     done[er.plan.Name],
			RowsRead:     st.rowsRead.Load() + st.resumedRows,
			ResumedRows:  st.resumedRows,
			ItemsWritten: st.itemsWritten.Load() + st.resumedItems,
			Rejected:     st.rejected.Load() + st.skipped.Load(),
			Estimate:     st.estimate,
			ETA:          -1,
		}
		p.ItemsEstimate = st.itemsEstimate()
		if final && !r.interrupted.Load() && p.ItemsEstimate >= 0 {
			p.ItemsEstimate = st.itemsBuilt.Load() + st.resumedItems // every row was read
		}
		if secs := st.seconds(); secs > 0 {
			p.ItemsPerSec = float64(st.itemsWritten.Load()) / secs
			if p.ItemsEstimate >= 0 && p.ItemsPerSec > 0 {
				p.ETA = max(float64(p.ItemsEstimate-p.ItemsWritten)/p.ItemsPerSec, 0)
			}
		}
		if final && p.ItemsWritten == st.itemsBuilt.Load()+st.resumedItems {
			p.ETA = 0
		}
		s.Entities = append(s.Entities, p)
	}
	stats := r.job.Sink.Stats()
	s.Throttled = stats.Throttled
	if el := now.Sub(r.meter.at).Seconds(); !r.meter.at.IsZero() && el > 0 {
		s.WCUPerSec = float64(stats.WriteUnits-r.meter.units) / el
	}
	r.meter = progressMeter{units: stats.WriteUnits, at: now}
	s.RateCap = r.rate.capWCU()
	return s
}

// Status is one moment of a command that goes on after its load (sync,
// streaming changes), shown by the display that showed the load's
// progress: StatusDisplay.
type Status struct {
	// Line is the terminal's one line, redrawn in place under the bars.
	Line string
	// JSON is the JSON display's line, its "event" field included.
	JSON any
	// Last is a moment shown whatever the interval (caught up, stopping).
	Last bool
}

// StatusDisplay is a Progress that also shows a Status; both displays
// are. ShowStatus is called from one goroutine at a time, as Update.
type StatusDisplay interface {
	Progress
	ShowStatus(s Status)
}

var (
	_ StatusDisplay = (*JSONProgress)(nil)
	_ StatusDisplay = (*TerminalProgress)(nil)
)

// gate lets a line through at most once per interval; a last line always.
type gate struct {
	interval time.Duration
	last     time.Time
}

func (g *gate) pass(last bool) bool {
	if !last && time.Since(g.last) < g.interval {
		return false
	}
	g.last = time.Now()
	return true
}

// JSONProgress writes a JSON status line every interval (and a last one at
// the end), for logs and CI where there is no terminal.
type JSONProgress struct {
	mu       sync.Mutex
	w        io.Writer
	progress gate
	status   gate
}

// NewJSONProgress writes progress and status lines to w, each at most once
// per interval. The first status line is written at once: it is the
// first sign that streaming has begun.
func NewJSONProgress(w io.Writer, interval time.Duration) *JSONProgress {
	return &JSONProgress{w: w, progress: gate{interval, time.Now()}, status: gate{interval: interval}}
}

// StatusEvery sets how often a status line is written, where it differs
// from the progress lines' interval (sync's --status-every).
func (j *JSONProgress) StatusEvery(d time.Duration) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.status.interval = d
}

// Update implements Progress.
func (j *JSONProgress) Update(p Snapshot) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.progress.pass(p.Final) {
		return
	}
	j.write(struct {
		Time  time.Time `json:"time"`
		Event string    `json:"event"`
		Snapshot
	}{time.Now().UTC(), "progress", p})
}

// ShowStatus implements StatusDisplay: s.JSON as one line.
func (j *JSONProgress) ShowStatus(s Status) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.status.pass(s.Last) {
		j.write(s.JSON)
	}
}

func (j *JSONProgress) write(line any) {
	b, _ := json.Marshal(line)
	_, _ = j.w.Write(append(b, '\n'))
}

// Close implements Progress.
func (j *JSONProgress) Close() {}

// itemsEstimate is the items the entity is expected to produce in all: the
// rows estimate times the items per row built so far this run, plus what
// earlier runs wrote; never less than the items built. -1 when there is no
// estimate yet.
func (st *entityStats) itemsEstimate() int64 {
	built := st.itemsBuilt.Load() + st.resumedItems
	read := st.rowsRead.Load()
	if st.estimate < 0 {
		return -1
	}
	perRow := 1.0
	if read > 0 {
		perRow = float64(st.itemsBuilt.Load()) / float64(read)
	}
	left := max(st.estimate-st.resumedRows, 0)
	return max(st.resumedItems+int64(perRow*float64(left)+0.5), built)
}
