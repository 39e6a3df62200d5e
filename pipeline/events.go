package pipeline

import (
	"context"
	"log/slog"
	"math"

	"github.com/dynafold/dynafold/sink"
)

// rated is a sink whose writes are paced by an adaptive rate (the DynamoDB
// writer); the run watches it to log and show rate changes.
type rated interface {
	Rate() *sink.AdaptiveRate
}

// rateWatch logs changes of the write rate, watched once a second from the
// run's coordinating goroutine: cuts on throttling and undone cuts at info,
// the gradual climb back at debug.
type rateWatch struct {
	rate        *sink.AdaptiveRate
	cur         float64
	cuts, undos int64
}

func newRateWatch(s sink.Sink) *rateWatch {
	r, ok := s.(rated)
	if !ok || r.Rate() == nil {
		return nil
	}
	w := &rateWatch{rate: r.Rate()}
	w.cur, w.cuts, w.undos = w.rate.Current(), w.rate.Cuts(), w.rate.Undone()
	return w
}

// capWCU is the active rate cap in write units per second, 0 when none.
func (w *rateWatch) capWCU() float64 {
	if w == nil {
		return 0
	}
	if c := w.rate.Current(); !math.IsInf(c, 1) {
		return c
	}
	return 0
}

func (r *run) watchRate() {
	w := r.rate
	if w == nil {
		return
	}
	cur, cuts, undos := w.rate.Current(), w.rate.Cuts(), w.rate.Undone()
	log := r.opts.Logger
	switch {
	case cuts > w.cuts:
		log.Info("throttled: write rate cut", "from_wcu", wcu(w.cur), "to_wcu", wcu(cur), "cuts", cuts)
	case undos > w.undos:
		log.Info("throttling did not ease after the cut: write rate restored", "from_wcu", wcu(w.cur), "to_wcu", wcu(cur), "cuts_undone", undos)
	case cur != w.cur:
		log.Debug("write rate raised", "from_wcu", wcu(w.cur), "to_wcu", wcu(cur))
	}
	w.cur, w.cuts, w.undos = cur, cuts, undos
}

// wcu is a rate for a log line: rounded, and -1 for unlimited (JSON has no
// infinity).
func wcu(r float64) float64 {
	if math.IsInf(r, 1) {
		return -1
	}
	return math.Round(r)
}

// logSaved logs a checkpoint save at debug level, with the rows it holds
// as acknowledged (counted only when debug is on: it copies every shard).
func (r *run) logSaved(ctx context.Context) {
	if !r.opts.Logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	var rows int64
	for _, s := range r.job.Store.Shards() {
		rows += s.Rows
	}
	r.opts.Logger.Debug("checkpoint saved", "rows", rows)
}
