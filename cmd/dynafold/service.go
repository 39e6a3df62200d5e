package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/dynafold/dynafold/metrics"
	"github.com/dynafold/dynafold/pipeline"
)

// addServiceFlags adds the flags of a long run a monitor watches: sync,
// migrate and export.
func addServiceFlags(f *pflag.FlagSet) {
	f.String("metrics-addr", "", "serve Prometheus metrics on /metrics, liveness on /healthz and readiness on /readyz at HOST:PORT (keep it on a private network; default: none)")
	f.Duration("stall-timeout", 5*time.Minute, "with --metrics-addr: /healthz fails once the work loop has not iterated for this long")
}

// observability is what --metrics-addr serves: a registry, liveness and
// readiness. Without the flag its fields are nil, and the metrics types'
// methods do nothing on nil.
type observability struct {
	reg    *prometheus.Registry
	health *metrics.Health
	srv    *metrics.Server
	table  string
}

// observe starts the metrics and health endpoints when --metrics-addr is
// set. Readiness fails at the first stop signal, before the run drains.
func (a *app) observe(table string) (*observability, error) {
	o := &observability{table: table}
	addr := a.v.GetString("metrics-addr")
	if addr == "" {
		return o, nil
	}
	if a.v.GetDuration("stall-timeout") <= 0 {
		return nil, usageError(fmt.Errorf("--stall-timeout must be positive, not %s", a.v.GetDuration("stall-timeout")))
	}
	o.reg = metrics.NewRegistry()
	o.health = metrics.NewHealth(a.v.GetDuration("stall-timeout"))
	srv, err := metrics.Serve(addr, o.reg, o.health, a.log)
	if err != nil {
		return nil, usageError(err)
	}
	o.srv = srv
	go func() {
		<-a.stop
		o.health.SetReady(false, "stopping")
	}()
	return o, nil
}

// runProgress wraps a migrate or export display with the run's series,
// and makes the run ready: its work has begun.
func (o *observability) runProgress(p pipeline.Progress, retries func() float64) pipeline.Progress {
	if o.reg == nil {
		return p
	}
	o.health.SetReady(true, "")
	return metrics.NewRun(o.reg, o.table, p, o.health, retries)
}

func (o *observability) close() {
	if o != nil && o.srv != nil {
		_ = o.srv.Close()
	}
}

// parseByteSize reads a size as PostgreSQL writes its settings: a number
// of bytes, or with a unit kB, MB, GB, TB (1024-based, as PostgreSQL
// reads them) or KiB, MiB, GiB, TiB.
func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a size (for example 1GiB, 512MB, 1073741824)", s)
	}
	mult := map[string]float64{"": 1, "B": 1, "kB": 1 << 10, "KB": 1 << 10, "KiB": 1 << 10, "MB": 1 << 20, "MiB": 1 << 20,
		"GB": 1 << 30, "GiB": 1 << 30, "TB": 1 << 40, "TiB": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%q is not a size: the unit %q is none of kB, MB, GB, TB, KiB, MiB, GiB, TiB", s, unit)
	}
	return int64(v * mult), nil
}
