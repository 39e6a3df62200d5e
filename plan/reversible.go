package plan

import (
	"fmt"

	"github.com/dynafold/dynafold/reverse"
)

// AddReversible puts the reversibility analysis in the report (plan
// --reversible): whatever cannot reverse becomes a mapping error, so the
// plan exits 2 naming the entity and column. file is the mapping file's
// path, for the line of the entity in each message ("" leaves it out).
func (r *Report) AddReversible(rr *reverse.Report, file string) {
	r.Reversible = rr
	for _, f := range rr.Failures() {
		what := "entity " + f.Entity
		if f.Column != "" {
			what += " column " + f.Column
		}
		msg := fmt.Sprintf("%s cannot be rebuilt from the items: %s. Fix: %s", what, f.Reason, f.Fix)
		if file != "" && f.Line > 0 {
			msg += fmt.Sprintf(" (%s:%d)", file, f.Line)
		}
		r.Findings = append(r.Findings, Finding{Severity: Error, Origin: Mapping, Check: "reverse.irreversible", Path: f.Path, Entity: f.Entity, Message: msg})
	}
	r.finish()
}
