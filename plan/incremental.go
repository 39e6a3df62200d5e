package plan

import (
	"fmt"
	"strings"

	"github.com/dynafold/dynafold/mapping"
)

// IncrementalReadiness says which entities `migrate --incremental` can
// narrow to their changed rows, per the mapping's changes:, and why the
// others are re-derived in full on every incremental run.
type IncrementalReadiness struct {
	Entities []IncrementalEntity `json:"entities"`
}

// IncrementalEntity is one entity's line.
type IncrementalEntity struct {
	Entity string `json:"entity"`
	Served bool   `json:"served"`
	// Reason says why the entity is read in full.
	Reason string `json:"reason,omitempty"`
	// Tables are the tables its items are built from, each with its change
	// column ("servers.updated_at") or "(none)".
	Tables []string `json:"tables"`
}

// Incremental reports the readiness of p for incremental runs, or nil when
// the mapping declares no changes:.
func Incremental(p *mapping.Plan) *IncrementalReadiness {
	if len(p.Changes) == 0 {
		return nil
	}
	r := &IncrementalReadiness{}
	for _, ep := range p.Entities {
		ok, why := ep.Incremental()
		e := IncrementalEntity{Entity: ep.Name, Served: ok, Reason: why}
		for _, d := range ep.Dependencies() {
			col := "(none)"
			if d.Changes != nil {
				col = d.Changes.Column
				if d.Changes.Deleted != "" {
					col += ", soft delete " + d.Changes.Deleted
				}
			}
			e.Tables = append(e.Tables, fmt.Sprintf("%s %s: %s", d.Kind, d.Table, col))
		}
		r.Entities = append(r.Entities, e)
	}
	return r
}

func (r *IncrementalReadiness) lines() []string {
	var out []string
	for _, e := range r.Entities {
		if e.Served {
			out = append(out, fmt.Sprintf("%s: incremental (%s)", e.Entity, strings.Join(e.Tables, "; ")))
		} else {
			out = append(out, fmt.Sprintf("%s: read in full on every incremental run: %s", e.Entity, e.Reason))
		}
	}
	return out
}
