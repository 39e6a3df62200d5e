package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynafold/dynafold/pipeline"
)

// Run is the series of a migrate or export run, read from the progress
// snapshot the pipeline takes every second: it is a pipeline.Progress
// that passes each snapshot on to the display, and beats the liveness.
type Run struct {
	inner   pipeline.Progress
	health  *Health
	retries func() float64
	// entity are the per-entity series, in the order of an
	// EntityProgress's rows read, rows done, items written, rejected.
	entity                  [4]*prometheus.Desc
	eta, throttled, retried *prometheus.Desc

	mu   sync.Mutex
	last pipeline.Snapshot
}

// NewRun registers a run's series for table on reg. inner is the display
// the snapshots go on to (nil: none); retries, when set, is the writer's
// count of requests sent again.
func NewRun(reg prometheus.Registerer, table string, inner pipeline.Progress, h *Health, retries func() float64) *Run {
	labels := prometheus.Labels{"table": table}
	desc := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, vars, labels)
	}
	r := &Run{inner: inner, health: h, retries: retries,
		entity: [4]*prometheus.Desc{
			desc("dynafold_rows_read_total", "Source rows read, per entity (the whole migration, resumed runs included).", "entity"),
			desc("dynafold_rows_done_total", "Source rows whose items are all acknowledged, per entity (as the checkpoint holds them).", "entity"),
			desc("dynafold_items_written_total", "Items acknowledged by DynamoDB (or durable in the export's files), per entity.", "entity"),
			desc("dynafold_rows_rejected_total", "Rows skipped or rejected under on_error, per entity.", "entity"),
		},
		eta:       desc("dynafold_eta_seconds", "Estimated seconds left, the slowest entity's; -1 until known."),
		throttled: desc("dynafold_requests_throttled_total", "DynamoDB requests throttled (throttling exceptions and partly unprocessed batches), this run."),
		retried:   desc("dynafold_retries_total", "Retries by kind: dynamodb_request (a request sent again).", "kind"),
	}
	reg.MustRegister(r)
	return r
}

// Update implements pipeline.Progress.
func (r *Run) Update(s pipeline.Snapshot) {
	r.mu.Lock()
	r.last = s
	r.mu.Unlock()
	r.health.Beat()
	if r.inner != nil {
		r.inner.Update(s)
	}
}

// Close implements pipeline.Progress.
func (r *Run) Close() {
	if r.inner != nil {
		r.inner.Close()
	}
}

// Describe implements prometheus.Collector.
func (r *Run) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range r.entity {
		ch <- d
	}
	ch <- r.eta
	ch <- r.throttled
	ch <- r.retried
}

// Collect implements prometheus.Collector.
func (r *Run) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	s := r.last
	r.mu.Unlock()
	eta := -1.0
	for _, e := range s.Entities {
		for i, v := range []int64{e.RowsRead, e.RowsDone, e.ItemsWritten, e.Rejected} {
			ch <- prometheus.MustNewConstMetric(r.entity[i], prometheus.CounterValue, float64(v), e.Entity)
		}
		eta = max(eta, e.ETA)
	}
	ch <- prometheus.MustNewConstMetric(r.eta, prometheus.GaugeValue, eta)
	ch <- prometheus.MustNewConstMetric(r.throttled, prometheus.CounterValue, float64(s.Throttled))
	if r.retries != nil {
		ch <- prometheus.MustNewConstMetric(r.retried, prometheus.CounterValue, r.retries(), RetryRequest)
	}
}
