package source

import (
	"context"
	"fmt"

	"github.com/dynafold/dynafold/value"
)

// Live sync re-derives the items of the rows a change touches. It reads
// those rows by key, and finds the rows that depend on a changed ancestor
// by the columns they join it on. Both reads are bounded lists of tuples.

// Match selects rows by a list of value tuples for a list of columns:
// (c1, c2) IN ((v1, v2), …).
type Match struct {
	// Columns are the matched columns, each of the base relation (Alias
	// "") or of a join.
	Columns []ColumnRef
	Tuples  [][]value.Value
}

// Reader reads the current state of the source in one read-only
// transaction, for live sync. Its methods are called from one goroutine.
type Reader interface {
	// ReadKeys streams the rows of q (with the rows of each nested query
	// attached, as Snapshot.ReadNested does) whose key is one of keys, in
	// key order. q's filter applies: a key that is absent or filtered out
	// produces no row.
	ReadKeys(ctx context.Context, q *Query, nests []*Query, keys [][]value.Value, emit func(value.Row, [][]value.Row) error) error
	// MatchKeys returns the keys of the rows of q whose m.Columns match
	// one of m.Tuples, ignoring q's filter (a row that has just left the
	// filter still depends on the row that changed).
	MatchKeys(ctx context.Context, q *Query, m Match, emit func(key []value.Value) error) error
	// Close ends the transaction.
	Close() error
}

// A Forker is a Reader whose state other connections can read at the same
// time: Fork begins a Reader of the very same state (the same snapshot) on
// another connection, so that a round that re-derives many rows can read
// them over several connections at once. The forked reader is closed
// before the reader it came from; Fork is called from the goroutine that
// uses the reader, before any fork is used.
type Forker interface {
	Fork(ctx context.Context) (Reader, error)
}

// KeysSQL builds the statement that reads the rows of q whose key is one
// of keys (at most a few hundred per statement), in key order. When q is
// a nested child query, only its parent-key prefix (the first len(keys[i])
// key columns) is matched.
func KeysSQL(d Dialect, q *Query, keys [][]value.Value, conv func(value.Value) any) Statement {
	b := &builder{d: d}
	b.selectList(q)
	b.from(q)
	n := len(keys[0])
	cols := make([]ColumnRef, n)
	for i := range cols {
		alias := ""
		if i < len(q.KeyAliases) {
			alias = q.KeyAliases[i]
		}
		cols[i] = ColumnRef{Alias: alias, Name: q.Key[i]}
	}
	b.filters(q, Full, nil, conv, func() { b.in(cols, keys, conv) })
	b.orderBy(q, false)
	return Statement{SQL: b.sb.String(), Args: b.args}
}

// MatchSQL builds the statement that returns the key columns of the rows
// of q matching m, without q's filter.
func MatchSQL(d Dialect, q *Query, m Match, conv func(value.Value) any) Statement {
	b := &builder{d: d}
	b.sb.WriteString("SELECT ")
	for i := range q.Key {
		if i > 0 {
			b.sb.WriteString(", ")
		}
		b.keyCol(q, i)
	}
	b.from(q)
	b.sb.WriteString(" WHERE ")
	b.in(m.Columns, m.Tuples, conv)
	return Statement{SQL: b.sb.String(), Args: b.args}
}

// in writes (c1, c2) IN ((?, ?), …), or c IN (?, …) for one column.
func (b *builder) in(cols []ColumnRef, tuples [][]value.Value, conv func(value.Value) any) {
	tuple := func(write func(i int)) {
		if len(cols) > 1 {
			b.sb.WriteString("(")
		}
		for i := range cols {
			if i > 0 {
				b.sb.WriteString(", ")
			}
			write(i)
		}
		if len(cols) > 1 {
			b.sb.WriteString(")")
		}
	}
	tuple(func(i int) { b.col(cols[i].Alias, cols[i].Name) })
	b.sb.WriteString(" IN (")
	for j, t := range tuples {
		if j > 0 {
			b.sb.WriteString(", ")
		}
		tuple(func(i int) { b.bind(conv(t[i])) })
	}
	b.sb.WriteString(")")
}

// ReadKeys implements Reader.ReadKeys on a driver transaction: parents by
// key, then each nested query for the same keys, matched to their parents
// in key order (as ReadNested does for a page).
func ReadKeys(ctx context.Context, tx Tx, d Dialect, conv func(value.Value) any, q *Query, nests []*Query, keys [][]value.Value, emit func(value.Row, [][]value.Row) error) error {
	if len(keys) == 0 {
		return nil
	}
	nkey := len(q.Key)
	page := make([]value.Row, 0, len(keys)) // a row a key, at most
	if err := tx.Query(ctx, KeysSQL(d, q, keys, conv), q.Columns, func(row value.Row) error {
		page = append(page, row)
		return nil
	}); err != nil {
		return err
	}
	nested := make([][][]value.Row, len(page))
	for i := range nested {
		nested[i] = make([][]value.Row, len(nests))
	}
	if len(page) > 0 {
		found := make([][]value.Value, len(page))
		for i, row := range page {
			found[i] = row[:nkey:nkey]
		}
		for k, nq := range nests {
			i := 0
			err := tx.Query(ctx, KeysSQL(d, nq, found, conv), nq.Columns, func(ch value.Row) error {
				var err error
				if i, err = parentOf(page, i, ch, nkey); err != nil {
					return fmt.Errorf("reading nested rows by key: %w", err)
				}
				nested[i][k] = append(nested[i][k], ch)
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	for i, row := range page {
		if err := emit(row, nested[i]); err != nil {
			return err
		}
	}
	return nil
}

// MatchKeys implements Reader.MatchKeys on a driver transaction.
func MatchKeys(ctx context.Context, tx Tx, d Dialect, conv func(value.Value) any, q *Query, m Match, emit func([]value.Value) error) error {
	if len(m.Tuples) == 0 {
		return nil
	}
	cols := make([]ColumnRef, len(q.Key))
	for i := range cols {
		cols[i] = q.Columns[i]
	}
	return tx.Query(ctx, MatchSQL(d, q, m, conv), cols, func(row value.Row) error { return emit(row) })
}
