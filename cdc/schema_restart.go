package cdc

import (
	"context"
	"slices"
	"strings"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/statestore"
)

// StoppedBy explains why a sync's mapping no longer loads against its
// source, when a schema change is why: a mapped column or table renamed
// or dropped while sync was stopped (or when it stopped for that change
// and is run again). The mapping fails to load before sync can read its
// log, so the tables' shapes now are judged against those its state
// recorded, with the columns the mapping read then. It returns nil when
// there is no state, no recorded shape, or no change that stops sync.
func StoppedBy(ctx context.Context, store statestore.Store, sh source.Shaper) (*SchemaError, error) {
	st, err := loadState(ctx, store)
	if err != nil || st == nil || len(st.Shapes) == 0 {
		return nil, err
	}
	keys := slices.Sorted(mapsKeys(st.Shapes))
	refs := make([]source.TableRef, len(keys))
	for i, k := range keys {
		refs[i] = parseRef(k)
	}
	now, err := sh.Shapes(ctx, refs)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		fs := classify(schemaInput{table: k, mapped: st.Mapped[k], was: st.Shapes[k], now: now[refs[i]],
			renamedTo: findRenamed(ctx, sh, st.Shapes[k], now[refs[i]])})
		if w, ok := worst(fs); ok && w.Action == ActStop {
			return &SchemaError{Finding: w}, nil
		}
	}
	return nil, nil
}

// parseRef reads back a table name as TableRef.String wrote it.
func parseRef(s string) source.TableRef {
	if schema, name, ok := strings.Cut(s, "."); ok {
		return source.TableRef{Schema: schema, Name: name}
	}
	return source.TableRef{Name: s}
}
