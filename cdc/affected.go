package cdc

import (
	"context"
	"fmt"
	"slices"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// readChunk bounds the tuples of one IN list: large enough to amortize a
// round trip, small enough for any planner and for MySQL's packet size.
const readChunk = 500

// affected is, per entity, the rows to re-derive, by encoded key.
type affected map[*mapping.EntityPlan]map[string][]value.Value

func (a affected) add(ep *mapping.EntityPlan, key []value.Value) {
	m := a[ep]
	if m == nil {
		m = map[string][]value.Value{}
		a[ep] = m
	}
	k := string(rowKey(key))
	if _, ok := m[k]; !ok {
		m[k] = slices.Clone(key)
	}
}

// touched is the rows the round's changes touch: by key, for an entity's
// own and nested tables; by the values of a join's columns, for a table an
// entity pre-joins, whose rows matchJoins then finds.
func (r *round) touched() (affected, map[*dep][][]value.Value, error) {
	aff := affected{}
	fan := map[*dep][][]value.Value{}
	for _, t := range r.txns {
		if !t.Partial {
			r.counts.Transactions++
		}
		for _, ch := range t.Changes {
			r.counts.Changes++
			if ch.Op == source.Truncate {
				// The rows left without row events: the table's readers
				// are derived again once the round is applied.
				if !slices.Contains(r.truncated, ch.Table) {
					r.truncated = append(r.truncated, ch.Table)
				}
				continue
			}
			for _, d := range r.e.graph.byTable[ch.Table] {
				for _, img := range []map[string]value.Value{ch.Old, ch.New} {
					vals, ok := pick(img, d.cols)
					if !ok {
						continue
					}
					switch d.kind {
					case depBase, depNest:
						aff.add(d.entity, vals)
					case depJoin:
						fan[d] = append(fan[d], vals)
						r.counts.ChangesFanned++
					}
				}
			}
		}
	}
	return aff, fan, nil
}

// matchJoins adds to aff the entity rows that join the changed rows of
// the tables they pre-join.
func (r *round) matchJoins(ctx context.Context, rd source.Reader, aff affected, fan map[*dep][][]value.Value) error {
	for d, tuples := range fan {
		for chunk := range slices.Chunk(dedupeTuples(tuples), readChunk) {
			err := rd.MatchKeys(ctx, d.entity.Query, source.Match{Columns: d.refs, Tuples: chunk}, func(key []value.Value) error {
				aff.add(d.entity, key)
				return nil
			})
			if err != nil {
				return fmt.Errorf("finding the %s rows that join %s: %w", d.entity.Name, d.alias, err)
			}
		}
	}
	return nil
}

// pick returns the values of cols in img; ok is false when the image lacks
// one (a before-image that carries only the key) or one is NULL (a row that
// references nothing).
func pick(img map[string]value.Value, cols []string) ([]value.Value, bool) {
	if img == nil {
		return nil, false
	}
	out := make([]value.Value, len(cols))
	for i, c := range cols {
		v, ok := img[c]
		if !ok || v.IsNull() {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

func dedupeTuples(ts [][]value.Value) [][]value.Value {
	seen := map[string]bool{}
	out := ts[:0]
	for _, t := range ts {
		k := string(rowKey(t))
		if !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	return out
}
