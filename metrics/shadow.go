package metrics

import "github.com/prometheus/client_golang/prometheus"

// Shadow is the series of sync's continuous shadow comparison (sync
// --shadow-patterns), labelled by access pattern. Its methods may be
// called on a nil *Shadow (no --metrics-addr), and from any goroutine.
type Shadow struct {
	comparisons, mismatches, skipped *prometheus.CounterVec
}

// NewShadow registers the shadow comparison's series for table on reg,
// each pattern's at 0 so that a rate over them is defined from the start.
func NewShadow(reg prometheus.Registerer, table string, patterns []string) *Shadow {
	labels := prometheus.Labels{"table": table}
	vec := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, []string{"pattern"})
	}
	s := &Shadow{
		comparisons: vec("dynafold_shadow_comparisons_total", "Shadow comparisons made: an access pattern's SQL answer and DynamoDB answer compared after sync applied past the SQL snapshot."),
		mismatches:  vec("dynafold_shadow_mismatches_total", "Shadow comparisons whose DynamoDB answer differed from an unchanged SQL answer in two rounds in a row."),
		skipped:     vec("dynafold_shadow_skipped_total", "Shadow comparisons not made: the rows moved between the two rounds, sync did not apply past the snapshot in time, or a query failed."),
	}
	for _, p := range patterns {
		s.comparisons.WithLabelValues(p)
		s.mismatches.WithLabelValues(p)
		s.skipped.WithLabelValues(p)
	}
	reg.MustRegister(s.comparisons, s.mismatches, s.skipped)
	return s
}

// Compared counts one comparison of pattern, and a mismatch when it
// disagreed.
func (s *Shadow) Compared(pattern string, mismatch bool) {
	if s == nil {
		return
	}
	s.comparisons.WithLabelValues(pattern).Inc()
	if mismatch {
		s.mismatches.WithLabelValues(pattern).Inc()
	}
}

// Skipped counts one comparison of pattern that could not be made.
func (s *Shadow) Skipped(pattern string) {
	if s == nil {
		return
	}
	s.skipped.WithLabelValues(pattern).Inc()
}
