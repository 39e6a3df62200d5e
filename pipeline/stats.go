package pipeline

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
)

// entityStats are one entity's live counters, updated by every stage.
type entityStats struct {
	rowsRead, itemsBuilt, itemsWritten atomic.Int64
	rejected, skipped                  atomic.Int64
	retried, throttled, readRetries    atomic.Int64
	shardsDone                         atomic.Int64
	shards                             int
	estimate                           int64
	resumedRows, resumedItems          int64
	mu                                 sync.Mutex
	first, last                        time.Time
}

func newEntityStats() *entityStats { return &entityStats{estimate: -1} }

// begin records when the entity's first shard started.
func (s *entityStats) begin() {
	s.mu.Lock()
	if s.first.IsZero() {
		s.first = time.Now()
	}
	s.mu.Unlock()
}

// touch records the latest acknowledgement.
func (s *entityStats) touch() {
	now := time.Now()
	s.mu.Lock()
	s.last = now
	s.mu.Unlock()
}

func (s *entityStats) seconds() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first.IsZero() || s.last.Before(s.first) {
		return 0
	}
	return s.last.Sub(s.first).Seconds()
}

// EntitySummary is one entity's line in the summary table and report.
type EntitySummary struct {
	Entity       string  `json:"entity"`
	RowsRead     int64   `json:"rows_read"`
	ItemsBuilt   int64   `json:"items_built"`
	ItemsWritten int64   `json:"items_written"`
	Rejected     int64   `json:"rejected"`
	Skipped      int64   `json:"skipped"`
	Retried      int64   `json:"retried_requests"`
	Throttled    int64   `json:"throttled_requests"`
	ReadRetries  int64   `json:"source_reconnects"`
	Seconds      float64 `json:"seconds"`
	ItemsPerSec  float64 `json:"items_per_second"`
	Shards       int     `json:"shards"`
	ShardsDone   int64   `json:"shards_done"`
	// Checkpoint totals include what earlier, resumed runs wrote;
	// ResumedRows and ResumedItems are the part of them that those
	// earlier runs did.
	CheckpointRows  int64 `json:"checkpoint_rows"`
	CheckpointItems int64 `json:"checkpoint_items"`
	ResumedRows     int64 `json:"resumed_rows"`
	ResumedItems    int64 `json:"resumed_items"`
}

// ReadAhead is rows this run read whose items were not all acknowledged
// by its end: the checkpoint does not hold them, and a resumed run reads
// them again.
func (e EntitySummary) ReadAhead() int64 {
	return max(e.RowsRead-(e.CheckpointRows-e.ResumedRows), 0)
}

// Summary is what a run did.
type Summary struct {
	Entities    []EntitySummary     `json:"entities"`
	Total       EntitySummary       `json:"total"`
	Sink        sink.Stats          `json:"writes"`
	Snapshot    source.SnapshotInfo `json:"snapshot"`
	Resumed     bool                `json:"resumed"`
	Interrupted bool                `json:"interrupted"`
	// Failed: the run stopped on an error (Run's), not by Stop.
	Failed     bool      `json:"failed,omitempty"`
	Started    time.Time `json:"started"`
	Ended      time.Time `json:"ended"`
	Seconds    float64   `json:"seconds"`
	RejectFile string    `json:"reject_file,omitempty"`
	Collisions int64     `json:"key_collisions"`
	// SplitPartsRemoved counts parts of split aggregates deleted because
	// their row failed before its head was written; SplitPartsLeft those a
	// sink that cannot delete left in place (logged with their rows).
	SplitPartsRemoved int64 `json:"split_parts_removed"`
	SplitPartsLeft    int64 `json:"split_parts_left,omitempty"`
}

func (r *run) summary(resumed bool) *Summary {
	end := time.Now()
	s := &Summary{
		Sink:        r.job.Sink.Stats(),
		Snapshot:    r.job.Snapshot.Info(),
		Resumed:     resumed,
		Interrupted: r.interrupted.Load(),
		Started:     r.started.UTC(),
		Ended:       end.UTC(),
		Seconds:     end.Sub(r.started).Seconds(),
		Collisions:  r.dedupe.collisions.Load(),

		SplitPartsRemoved: r.gates.removed.Load(),
		SplitPartsLeft:    r.gates.left.Load(),
	}
	if r.policy.wrote() {
		s.RejectFile = r.policy.path
	}
	ckpt := map[string][3]int64{} // rows, items, shards done
	for _, sh := range r.job.Store.Shards() {
		c := ckpt[sh.Entity]
		c[0] += sh.Rows
		c[1] += sh.Items
		if sh.Status == checkpoint.Done {
			c[2]++
		}
		ckpt[sh.Entity] = c
	}
	t := &s.Total
	t.Entity = "total"
	for _, er := range r.order {
		st := er.stats
		e := EntitySummary{
			Entity:          er.plan.Name,
			RowsRead:        st.rowsRead.Load(),
			ItemsBuilt:      st.itemsBuilt.Load(),
			ItemsWritten:    st.itemsWritten.Load(),
			Rejected:        st.rejected.Load(),
			Skipped:         st.skipped.Load(),
			Retried:         st.retried.Load(),
			Throttled:       st.throttled.Load(),
			ReadRetries:     st.readRetries.Load(),
			Seconds:         st.seconds(),
			Shards:          st.shards,
			ShardsDone:      ckpt[er.plan.Name][2],
			CheckpointRows:  ckpt[er.plan.Name][0],
			CheckpointItems: ckpt[er.plan.Name][1],
			ResumedRows:     st.resumedRows,
			ResumedItems:    st.resumedItems,
		}
		if e.Seconds > 0 {
			e.ItemsPerSec = float64(e.ItemsWritten) / e.Seconds
		}
		s.Entities = append(s.Entities, e)
		t.RowsRead += e.RowsRead
		t.ItemsBuilt += e.ItemsBuilt
		t.ItemsWritten += e.ItemsWritten
		t.Rejected += e.Rejected
		t.Skipped += e.Skipped
		t.Retried += e.Retried
		t.Throttled += e.Throttled
		t.ReadRetries += e.ReadRetries
		t.Shards += e.Shards
		t.ShardsDone += e.ShardsDone
		t.CheckpointRows += e.CheckpointRows
		t.CheckpointItems += e.CheckpointItems
		t.ResumedRows += e.ResumedRows
		t.ResumedItems += e.ResumedItems
	}
	t.Seconds = s.Seconds
	if t.Seconds > 0 {
		t.ItemsPerSec = float64(t.ItemsWritten) / t.Seconds
	}
	return s
}
