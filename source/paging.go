package source

import (
	"context"
	"fmt"

	"github.com/dynafold/dynafold/value"
)

// Tx is one read-only transaction of a driver, as the paging below needs
// it: run a statement and decode each row into values of the columns'
// kinds. Rows are passed to fn one at a time, in order, while the result is
// still being read; fn owns the row.
type Tx interface {
	Query(ctx context.Context, st Statement, cols []ColumnRef, fn func(value.Row) error) error
}

// ReadPages streams the rows of q inside r after the key position after,
// one keyset page of pageSize rows per statement. Drivers implement
// Snapshot.Read with it.
func ReadPages(ctx context.Context, tx Tx, d Dialect, conv func(value.Value) any, q *Query, r Range, after []value.Value, pageSize int, emit func(value.Row) error) error {
	nkey := len(q.Key)
	for {
		st := PageSQL(d, q, r, after, pageSize, conv)
		n := 0
		err := tx.Query(ctx, st, q.Columns, func(row value.Row) error {
			after = row[:nkey:nkey]
			n++
			return emit(row)
		})
		if err != nil {
			return err
		}
		if n < pageSize {
			return nil
		}
	}
}

// ReadNested streams the rows of q with the rows of each nested query
// (whose first len(q.Key) columns are the parent's key) attached to their
// parent. It reads a page of parents, then each nested query for exactly
// that page's key range, in the same transaction: parents and children are
// consistent on every engine, and children are matched to parents by key
// equality in the order the database gives both. Children of all nests but
// the last are held for one page; the last nest is streamed, so at most one
// parent's children of it are held at a time. Drivers implement
// Snapshot.ReadNested with it.
func ReadNested(ctx context.Context, tx Tx, d Dialect, conv func(value.Value) any, q *Query, nests []*Query, r Range, after []value.Value, pageSize int, emit func(value.Row, [][]value.Row) error) error {
	nkey := len(q.Key)
	for {
		var page []value.Row
		err := tx.Query(ctx, PageSQL(d, q, r, after, pageSize, conv), q.Columns, func(row value.Row) error {
			page = append(page, row)
			return nil
		})
		if err != nil || len(page) == 0 {
			return err
		}
		through := page[len(page)-1][:nkey:nkey]
		nested := make([][][]value.Row, len(page))
		for i := range nested {
			nested[i] = make([][]value.Row, len(nests))
		}
		for k, nq := range nests[:len(nests)-1] {
			i := 0
			err := tx.Query(ctx, RangeSQL(d, nq, r, after, through, conv), nq.Columns, func(ch value.Row) error {
				var err error
				if i, err = parentOf(page, i, ch, nkey); err != nil {
					return err
				}
				nested[i][k] = append(nested[i][k], ch)
				return nil
			})
			if err != nil {
				return err
			}
		}
		// The last nest streams: a parent is emitted once a child of a
		// later parent (or the end) shows its children are complete.
		last := len(nests) - 1
		next := 0
		flush := func(upto int) error {
			for ; next < upto; next++ {
				if err := emit(page[next], nested[next]); err != nil {
					return err
				}
				nested[next] = nil
			}
			return nil
		}
		i := 0
		err = tx.Query(ctx, RangeSQL(d, nests[last], r, after, through, conv), nests[last].Columns, func(ch value.Row) error {
			var err error
			if i, err = parentOf(page, i, ch, nkey); err != nil {
				return err
			}
			if err := flush(i); err != nil {
				return err
			}
			nested[i][last] = append(nested[i][last], ch)
			return nil
		})
		if err != nil {
			return err
		}
		if err := flush(len(page)); err != nil {
			return err
		}
		if len(page) < pageSize {
			return nil
		}
		after = through
	}
}

// parentOf advances from page[i] to the parent whose key the child row
// starts with. Both come in the database's key order, so the parent is at
// i or later; running off the page means the two reads disagree.
func parentOf(page []value.Row, i int, child value.Row, nkey int) (int, error) {
	for ; i < len(page); i++ {
		if keyEqual(page[i], child, nkey) {
			return i, nil
		}
	}
	return i, fmt.Errorf("a nested row's parent key %v is not among the parents read in the same transaction", child[:nkey])
}

func keyEqual(a, b value.Row, n int) bool {
	for j := 0; j < n; j++ {
		if !value.Equal(a[j], b[j]) {
			return false
		}
	}
	return true
}
