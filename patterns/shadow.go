package patterns

import (
	"context"
	"strings"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// Shadow is a plan's patterns with sql:, checked against the source and
// bound once, for comparisons repeated while sync runs (sync
// --shadow-patterns). A comparison is split in its two halves, so that
// the caller can wait between them: the SQL answer read in a snapshot,
// then the DynamoDB answer compared with it. Its methods may be called
// concurrently.
type Shadow struct {
	plan  *mapping.Plan
	preps []*prepared
}

// PrepareShadow checks and binds every pattern with sql: as Compare does;
// problems are mapping.Errors naming the key.
func PrepareShadow(ctx context.Context, d Describer, plan *mapping.Plan) (*Shadow, error) {
	preps, err := prepare(ctx, d, plan, "")
	if err != nil {
		return nil, err
	}
	return &Shadow{plan: plan, preps: preps}, nil
}

// Patterns are the names of the patterns compared, by index.
func (s *Shadow) Patterns() []string {
	out := make([]string, len(s.preps))
	for i, pp := range s.preps {
		out[i] = pp.p.Name
	}
	return out
}

// Tuples reads pattern i's parameter tuples in sess (one empty tuple for
// a pattern without params:).
func (s *Shadow) Tuples(ctx context.Context, sess source.ReadOnlySession, i int) ([]value.Row, error) {
	return s.preps[i].tuples(ctx, sess)
}

// Params says a tuple of pattern i as name=value pairs.
func (s *Shadow) Params(i int, tuple value.Row) string { return paramText(s.preps[i].names, tuple) }

// SQLAnswer is the SQL half of one comparison.
type SQLAnswer struct{ a *sqlAnswer }

// ReadSQL runs pattern i's SQL for tuple in sess.
func (s *Shadow) ReadSQL(ctx context.Context, sess source.ReadOnlySession, i int, tuple value.Row) (SQLAnswer, error) {
	a, err := s.preps[i].readSQL(ctx, sess, tuple)
	return SQLAnswer{a}, err
}

// Check runs the DynamoDB query of a's pattern and tuple and compares its
// items with a's rows, as patterns --compare-source does: nil when they
// agree. global reports whether the query read a global secondary index,
// whose answer is eventually consistent.
func (s *Shadow) Check(ctx context.Context, api QueryAPI, a SQLAnswer) (m *Mismatch, global bool, err error) {
	return a.a.pp.check(ctx, api, s.plan, a.a)
}

// Text is the mismatch as patterns --compare-source prints it: the
// parameters, rows only in SQL, items only in DynamoDB, attribute
// differences and the two queries.
func (m *Mismatch) Text() string {
	var sb strings.Builder
	m.writeText(&sb)
	return sb.String()
}

// ParamText is the mismatch's parameters as name=value pairs.
func (m *Mismatch) ParamText() string { return m.paramText() }
