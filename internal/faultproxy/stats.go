package faultproxy

import "sync/atomic"

// Stats counts what the proxy did. Served as JSON by GET /__faultproxy/stats.
type Stats struct {
	// Requests counts every proxied request.
	Requests int64 `json:"requests"`
	// Eligible counts requests whose operation is subject to faults.
	Eligible int64 `json:"eligible"`
	// Forwarded counts requests sent to the backend, including partial and
	// reset-after ones.
	Forwarded int64 `json:"forwarded"`
	// BackendErrors counts forwards that failed (answered 502).
	BackendErrors int64 `json:"backend_errors"`

	Throttle   int64 `json:"throttle"`
	Throttling int64 `json:"throttling"`
	Error500   int64 `json:"error_500"`
	Error503   int64 `json:"error_503"`
	Reset      int64 `json:"reset"`
	ResetAfter int64 `json:"reset_after"`
	// Partial counts batches forwarded in part; PartialHeldBack counts the
	// write requests held back and reported as unprocessed.
	Partial         int64 `json:"partial"`
	PartialHeldBack int64 `json:"partial_held_back"`
	// PartialSkipped counts batches drawn for a partial fault that could not
	// be split (fewer than two requests); they were forwarded whole.
	PartialSkipped int64 `json:"partial_skipped"`
	// Delayed counts requests given added latency; DelayMillis sums it.
	Delayed     int64 `json:"delayed"`
	DelayMillis int64 `json:"delay_ms"`
}

type counters struct {
	requests, eligible, forwarded, backendErrors atomic.Int64
	throttle, throttling, error500, error503     atomic.Int64
	reset, resetAfter                            atomic.Int64
	partial, partialHeldBack, partialSkipped     atomic.Int64
	delayed, delayMillis                         atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Requests:        c.requests.Load(),
		Eligible:        c.eligible.Load(),
		Forwarded:       c.forwarded.Load(),
		BackendErrors:   c.backendErrors.Load(),
		Throttle:        c.throttle.Load(),
		Throttling:      c.throttling.Load(),
		Error500:        c.error500.Load(),
		Error503:        c.error503.Load(),
		Reset:           c.reset.Load(),
		ResetAfter:      c.resetAfter.Load(),
		Partial:         c.partial.Load(),
		PartialHeldBack: c.partialHeldBack.Load(),
		PartialSkipped:  c.partialSkipped.Load(),
		Delayed:         c.delayed.Load(),
		DelayMillis:     c.delayMillis.Load(),
	}
}
