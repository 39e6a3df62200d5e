package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Sync states, the values of dynafold_sync_state's state label.
const (
	StateLoading      = "loading"
	StateStreaming    = "streaming"
	StateReconnecting = "reconnecting"
	StateStopping     = "stopping"
	StateResnapshot   = "resnapshot"
	// StateStandby: another sync holds the shared state's lease; this one
	// waits to take over.
	StateStandby = "standby"
)

var syncStates = []string{StateLoading, StateStreaming, StateReconnecting, StateStopping, StateResnapshot, StateStandby}

// Retry kinds, the values of dynafold_retries_total's kind label.
const (
	// RetryRequest is a DynamoDB request sent again (throttled, 5xx, a
	// broken connection), counted by the writer.
	RetryRequest = "dynamodb_request"
	// RetrySource is an attempt to reach the source again after it went
	// away.
	RetrySource = "source_reconnect"
	// RetryRound is an apply round (or the initial load) run again after a
	// transient fault.
	RetryRound = "round"
)

// SyncSources are the values the series read at scrape time from the
// running sync and its writer.
type SyncSources struct {
	// Lag is now minus the commit time of the oldest change not yet
	// applied, in seconds; 0 when caught up.
	Lag func() float64
	// Behind is the source's log between the confirmed position and its
	// latest reported end, in bytes.
	Behind func() float64
	// Throttled and RequestRetries are the writer's counts of throttled
	// and retried requests.
	Throttled, RequestRetries func() float64
}

// Sync is the series of one sync. Its methods may be called on a nil
// *Sync (no --metrics-addr), and from any goroutine.
type Sync struct {
	state     *prometheus.GaugeVec
	connected prometheus.Gauge
	changes   prometheus.Counter
	txns      prometheus.Counter
	written   prometheus.Counter
	deleted   prometheus.Counter
	lastEvent prometheus.Gauge
	retained  prometheus.Gauge
	retries   *retries
	schema    *prometheus.CounterVec
}

// NewSync registers sync's series for table on reg.
func NewSync(reg prometheus.Registerer, table string, src SyncSources) *Sync {
	labels := prometheus.Labels{"table": table}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
	}
	s := &Sync{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dynafold_sync_state", ConstLabels: labels,
			Help: "1 for the state sync is in (loading, streaming, reconnecting, stopping, resnapshot), 0 for the others."}, []string{"state"}),
		connected: gauge("dynafold_source_connected", "1 while the source's change stream is connected, 0 while it is being reached again."),
		changes:   counter("dynafold_sync_changes_applied_total", "Row changes applied (re-derived and acknowledged by DynamoDB)."),
		txns:      counter("dynafold_sync_transactions_applied_total", "Source transactions applied."),
		written:   counter("dynafold_items_written_total", "Items put and acknowledged by DynamoDB, the initial load's included."),
		deleted:   counter("dynafold_items_deleted_total", "Items deleted and acknowledged by DynamoDB."),
		lastEvent: gauge("dynafold_sync_last_event_timestamp_seconds", "Unix time of the last event the change stream delivered (a transaction or an idle keepalive)."),
		retained:  gauge("dynafold_sync_retained_wal_bytes", "PostgreSQL: WAL the replication slot keeps on the server (current WAL position minus the slot's restart_lsn)."),
		retries:   &retries{requests: src.RequestRetries, table: table},
		schema: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dynafold_sync_schema_changes_total", ConstLabels: labels,
			Help: "Schema changes of mapped tables sync met, by what it did: continue (values kept), rederive (the entities that read the table were read again), stop."}, []string{"action"}),
	}
	for _, a := range []string{"continue", "rederive", "stop"} {
		s.schema.WithLabelValues(a)
	}
	reg.MustRegister(s.state, s.connected, s.changes, s.txns, s.written, s.deleted, s.lastEvent, s.retained, s.retries, s.schema,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dynafold_sync_lag_seconds", ConstLabels: labels,
			Help: "Now minus the commit time of the oldest change not yet applied; 0 when caught up. It grows while sync is stalled."}, src.Lag),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dynafold_sync_behind_bytes", ConstLabels: labels,
			Help: "Bytes of the source's log (PostgreSQL WAL, MySQL binlog) between the confirmed position and the latest end the source reported."}, src.Behind),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "dynafold_requests_throttled_total", ConstLabels: labels,
			Help: "DynamoDB requests throttled (throttling exceptions and partly unprocessed batches)."}, src.Throttled),
	)
	s.SetState(StateLoading)
	return s
}

// SetState makes state the one dynafold_sync_state reports.
func (s *Sync) SetState(state string) {
	if s == nil {
		return
	}
	for _, st := range syncStates {
		v := 0.0
		if st == state {
			v = 1
		}
		s.state.WithLabelValues(st).Set(v)
	}
}

// SetConnected records whether the change stream is connected.
func (s *Sync) SetConnected(up bool) {
	if s == nil {
		return
	}
	if up {
		s.connected.Set(1)
	} else {
		s.connected.Set(0)
	}
}

// Applied counts a round's transactions, changes and items.
func (s *Sync) Applied(txns, changes, written, deleted int64) {
	if s == nil {
		return
	}
	s.txns.Add(float64(txns))
	s.changes.Add(float64(changes))
	s.written.Add(float64(written))
	s.deleted.Add(float64(deleted))
}

// Loaded counts items the initial load wrote.
func (s *Sync) Loaded(items int64) {
	if s != nil && items > 0 {
		s.written.Add(float64(items))
	}
}

// Event records that the change stream delivered an event at t.
func (s *Sync) Event(t time.Time) {
	if s != nil {
		s.lastEvent.Set(float64(t.UnixNano()) / 1e9)
	}
}

// RetainedWAL records the WAL the slot retains.
func (s *Sync) RetainedWAL(bytes int64) {
	if s != nil {
		s.retained.Set(float64(bytes))
	}
}

// SchemaChange counts one schema change and what sync did about it.
func (s *Sync) SchemaChange(action string) {
	if s != nil {
		s.schema.WithLabelValues(action).Inc()
	}
}

// Retry counts one retry of kind RetrySource or RetryRound.
func (s *Sync) Retry(kind string) {
	if s == nil {
		return
	}
	switch kind {
	case RetrySource:
		s.retries.source.Add(1)
	case RetryRound:
		s.retries.round.Add(1)
	}
}

// retries is dynafold_retries_total: the writer's request retries, read
// at scrape time, and sync's own reconnects and rounds run again.
type retries struct {
	requests      func() float64
	source, round atomic.Int64
	table         string
}

func (r *retries) Describe(ch chan<- *prometheus.Desc) { ch <- r.desc() }

func (r *retries) desc() *prometheus.Desc {
	return prometheus.NewDesc("dynafold_retries_total", "Retries by kind: dynamodb_request (a request sent again), source_reconnect (an attempt to reach the source again), round (an apply round or the initial load run again after a fault).",
		[]string{"kind"}, prometheus.Labels{"table": r.table})
}

func (r *retries) Collect(ch chan<- prometheus.Metric) {
	d := r.desc()
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, r.requests(), RetryRequest)
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(r.source.Load()), RetrySource)
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(r.round.Load()), RetryRound)
}
