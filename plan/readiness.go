package plan

import (
	"strings"

	"github.com/dynafold/dynafold/source"
)

// SyncReadiness says whether `dynafold sync` could run on this source and
// mapping: the same checks sync makes before it creates anything.
type SyncReadiness struct {
	// Checked is false when the source has no change source (Note says
	// why).
	Checked bool `json:"checked"`
	Ready   bool `json:"ready"`
	// Unsupported names what in the mapping sync refuses (a query entity).
	Unsupported string           `json:"unsupported,omitempty"`
	Problems    []source.Problem `json:"problems,omitempty"`
	Note        string           `json:"note,omitempty"`
}

func (s *SyncReadiness) lines() []string {
	switch {
	case !s.Checked:
		return []string{"not checked: " + s.Note}
	case s.Ready:
		return []string{"ready: wal_level, replication role, replica identities, slots and senders are all in order"}
	}
	var out []string
	if s.Unsupported != "" {
		out = append(out, "not ready: "+s.Unsupported)
	}
	for _, p := range s.Problems {
		out = append(out, "not ready: "+p.What, "  fix: "+p.Fix)
	}
	return out
}

func (s *SyncReadiness) text() string { return strings.Join(s.lines(), "\n  ") }
