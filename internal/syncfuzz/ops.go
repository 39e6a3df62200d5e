package syncfuzz

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// errNoRow: the operation found no row to work on (an empty table).
var errNoRow = errors.New("no row")

// session is one source connection of the fuzzer, with its open
// transaction if any.
type session struct {
	id   int
	conn *sql.Conn
	open bool
	// left is how many operations the open transaction still takes.
	left int
	// undo > 0 while a savepoint block that will be rolled back is open:
	// the operations left before ROLLBACK TO SAVEPOINT.
	undo int
	// rollback: the open transaction ends in ROLLBACK.
	rollback bool
}

// exec runs one statement and appends it to the log.
func (f *fuzzer) exec(ctx context.Context, s *session, stmt string) error {
	f.log.statement(s.id, stmt)
	f.res.Statements++
	_, err := s.conn.ExecContext(ctx, stmt)
	if f.o.Trace != nil {
		outcome := "ok"
		if err != nil {
			outcome = err.Error()
		}
		fmt.Fprintf(f.o.Trace, "[%d] %s -> %s\n", s.id, stmt, outcome)
	}
	return err
}

// query reads rows of text (NULL as nil) on the session, so that a read
// sees the session's own uncommitted writes.
func (f *fuzzer) query(ctx context.Context, s *session, q string) ([][]*string, error) {
	rows, err := s.conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]*string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]*string, len(cols))
		for i, v := range vals {
			if v.Valid {
				row[i] = &v.String
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// literal is a value read back, as a literal.
func (f *fuzzer) literal(v *string) string {
	if v == nil {
		return "NULL"
	}
	return f.d.str(*v)
}

func (f *fuzzer) quoteAll(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = f.d.quote(c)
	}
	return strings.Join(q, ", ")
}

// qualified is cols, each named with its table, for a comma list.
func (f *fuzzer) qualified(table string, cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = f.d.quote(table) + "." + f.d.quote(c)
	}
	return strings.Join(q, ", ")
}

// pick reads cols of a row of t chosen by the seed: the first row at or
// after a key drawn from the keys the table has had, by an index seek.
// (Counting rows and skipping to the k-th costs the table's size on every
// pick; in a large transaction that is quadratic.)
func (f *fuzzer) pick(ctx context.Context, s *session, t *table, cols []string) ([]string, error) {
	texts := make([]string, len(cols))
	for i, c := range cols {
		texts[i] = f.d.text(c)
	}
	q := fmt.Sprintf("SELECT %s FROM %s", strings.Join(texts, ", "), f.d.quote(t.name))
	// The key columns are named with their table: bare, PostgreSQL takes
	// them for the selected texts of the same names ("id"::text is
	// output as id), sorts every row at or after the bound by its text
	// and cannot walk the key's index, which made each pick read the
	// table and the 1,000,000-row transaction quadratic.
	order := fmt.Sprintf(" ORDER BY %s LIMIT 1", f.qualified(t.name, t.pk))
	var rows [][]*string
	var err error
	if keys := f.known[t.name]; len(keys) > 0 {
		rows, err = f.query(ctx, s, q+" WHERE "+f.atOrAfter(t.pk, keys[f.v.rng.IntN(len(keys))])+order)
		if err != nil {
			return nil, err
		}
	}
	if len(rows) == 0 {
		// Past the last row: wrap around to the first.
		if rows, err = f.query(ctx, s, q+order); err != nil {
			return nil, err
		}
	}
	if len(rows) == 0 {
		return nil, errNoRow
	}
	out := make([]string, len(cols))
	for i, v := range rows[0] {
		out[i] = f.literal(v)
	}
	return out, nil
}

// atOrAfter is the condition (cols) >= (lits) in key order, spelled out
// column by column: a > x OR (a = x AND b >= y).
func (f *fuzzer) atOrAfter(cols, lits []string) string {
	last := len(cols) - 1
	cond := f.d.quote(cols[last]) + " >= " + lits[last]
	for i := last - 1; i >= 0; i-- {
		c := f.d.quote(cols[i])
		cond = fmt.Sprintf("(%s > %s OR (%s = %s AND %s))", c, lits[i], c, lits[i], cond)
	}
	return cond
}

// remember adds a key t may have now, for pick.
func (f *fuzzer) remember(t *table, key []string) {
	if !slices.Contains(key, "NULL") {
		f.known[t.name] = append(f.known[t.name], key)
	}
}

// loadKeys reads the keys the tables start with.
func (f *fuzzer) loadKeys(ctx context.Context) error {
	f.known = map[string][][]string{}
	for _, t := range append(append([]*table(nil), f.mapped...), f.unmapped) {
		texts := make([]string, len(t.pk))
		for i, c := range t.pk {
			texts[i] = f.d.text(c)
		}
		rows, err := f.db.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM %s ORDER BY %s", strings.Join(texts, ", "), f.d.quote(t.name), f.quoteAll(t.pk)))
		if err != nil {
			return err
		}
		for rows.Next() {
			vals := make([]string, len(t.pk))
			ptrs := make([]any, len(vals))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return err
			}
			for i, v := range vals {
				vals[i] = f.d.str(v)
			}
			f.remember(t, vals)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// where is "a = 'x' AND b = 'y'".
func (f *fuzzer) where(cols, lits []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = f.d.quote(c) + " = " + lits[i]
	}
	return strings.Join(parts, " AND ")
}

// assign is "a = 'x', b = 'y'".
func (f *fuzzer) assign(cols, lits []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = f.d.quote(c) + " = " + lits[i]
	}
	return strings.Join(parts, ", ")
}

// parentValues chooses the values of a foreign key: a parent row's
// referenced columns, or NULL now and then where the key allows it.
func (f *fuzzer) parentValues(ctx context.Context, s *session, t *table, fk *fkey) ([]string, error) {
	nullable := true
	for _, c := range fk.cols {
		nullable = nullable && t.col(c).nullable && !f.roles.isJoinKey(t.name, c)
	}
	if nullable && f.v.chance(0.1) {
		out := make([]string, len(fk.cols))
		for i := range out {
			out[i] = "NULL"
		}
		return out, nil
	}
	return f.pick(ctx, s, f.s.tables[fk.parent], fk.refCols)
}

// insert adds a row to t: foreign keys point at existing parents, key
// columns take fresh values.
func (f *fuzzer) insert(ctx context.Context, s *session, t *table) error {
	set := map[string]string{}
	for _, fk := range t.fks {
		vals, err := f.parentValues(ctx, s, t, fk)
		if err != nil {
			return err
		}
		for i, c := range fk.cols {
			set[c] = vals[i]
		}
	}
	var cols, lits []string
	for _, c := range t.cols {
		if c.skip || c.kind == kOther {
			if !c.skip && !c.nullable && !c.def {
				return fmt.Errorf("table %s: column %s has a type the fuzzer cannot write", t.name, c.name)
			}
			continue
		}
		lit, ok := set[c.name]
		if !ok {
			if c.def && !slices.Contains(t.pk, c.name) && f.v.chance(0.2) {
				continue // the default fills it
			}
			if slices.Contains(t.pk, c.name) {
				lit = f.keyPart(t, c)
			} else {
				lit = f.v.value(t, c)
			}
		}
		cols = append(cols, c.name)
		lits = append(lits, lit)
	}
	key := make([]string, len(t.pk))
	for i, pc := range t.pk {
		key[i] = lits[slices.Index(cols, pc)]
	}
	f.remember(t, key)
	return f.exec(ctx, s, fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", f.d.quote(t.name), f.quoteAll(cols), strings.Join(lits, ", ")))
}

// keyPart is a value for a primary-key column: fresh for the last column
// (which makes the key new), often a value other rows have for the
// others, so that a composite key's leading column (a tenant, a user)
// takes values a where: filter selects.
func (f *fuzzer) keyPart(t *table, c *column) string {
	if c.name != t.pk[len(t.pk)-1] {
		if p := f.v.palette[t.name][c.name]; len(p) > 0 && f.v.chance(0.5) {
			return f.d.str(p[f.v.rng.IntN(len(p))])
		}
	}
	return f.v.fresh(t, c)
}

// update changes one to three non-key columns of a row; a foreign key
// among them moves the row to another parent.
func (f *fuzzer) update(ctx context.Context, s *session, t *table) error {
	var candidates []string
	for _, c := range t.cols {
		if !c.skip && c.kind != kOther && !slices.Contains(t.pk, c.name) {
			candidates = append(candidates, c.name)
		}
	}
	if len(candidates) == 0 {
		return errNoRow
	}
	pk, err := f.pick(ctx, s, t, t.pk)
	if err != nil {
		return err
	}
	set := map[string]string{}
	var order []string
	for range 1 + f.v.rng.IntN(min(3, len(candidates))) {
		name := candidates[f.v.rng.IntN(len(candidates))]
		if _, done := set[name]; done {
			continue
		}
		if fk := t.fkOf(name); fk != nil {
			vals, err := f.parentValues(ctx, s, t, fk)
			if err != nil {
				return err
			}
			for i, c := range fk.cols {
				if _, done := set[c]; !done {
					order = append(order, c)
				}
				set[c] = vals[i]
			}
			continue
		}
		set[name] = f.v.value(t, t.col(name))
		order = append(order, name)
	}
	parts := make([]string, 0, len(order))
	for _, c := range order {
		parts = append(parts, f.d.quote(c)+" = "+set[c])
	}
	return f.exec(ctx, s, fmt.Sprintf("UPDATE %s SET %s WHERE %s", f.d.quote(t.name), strings.Join(parts, ", "), f.where(t.pk, pk)))
}

// remove deletes a row: alone (which fails while children reference it),
// or with its descendants first, as ON DELETE CASCADE would.
func (f *fuzzer) remove(ctx context.Context, s *session, t *table) error {
	pk, err := f.pick(ctx, s, t, t.pk)
	if err != nil {
		return err
	}
	if len(t.refs) > 0 && f.v.chance(0.6) {
		// A subtree of more than 64 deletes is given up: deleting a genre
		// with every track, line and playlist entry under it would leave
		// little to fuzz.
		f.cascadeLeft = 64
		return f.cascade(ctx, s, t, t.pk, pk, 0)
	}
	return f.exec(ctx, s, fmt.Sprintf("DELETE FROM %s WHERE %s", f.d.quote(t.name), f.where(t.pk, pk)))
}

// cascade deletes the rows of t where cols equal lits, their descendants
// first.
func (f *fuzzer) cascade(ctx context.Context, s *session, t *table, cols, lits []string, depth int) error {
	if depth > 12 {
		// A self-reference chain this deep (or a cycle): the operation
		// is given up, and its savepoint undoes what it did.
		return errNoRow
	}
	for _, ref := range t.refs {
		child := f.s.tables[ref.child]
		// The referenced values of the rows being deleted.
		texts := make([]string, len(ref.refCols))
		for i, c := range ref.refCols {
			texts[i] = f.d.text(c)
		}
		// Ordered: the heap's order changes with vacuum, and the
		// statements must not.
		parents, err := f.query(ctx, s, fmt.Sprintf("SELECT DISTINCT %s FROM %s WHERE %s ORDER BY %s", strings.Join(texts, ", "),
			f.d.quote(t.name), f.where(cols, lits), ordinals(len(texts))))
		if err != nil {
			return err
		}
		for _, p := range parents {
			plits := make([]string, len(p))
			for i, v := range p {
				plits[i] = f.literal(v)
			}
			if slices.Contains(plits, "NULL") {
				continue
			}
			if err := f.cascade(ctx, s, child, ref.cols, plits, depth+1); err != nil {
				return err
			}
		}
	}
	if f.cascadeLeft--; f.cascadeLeft < 0 {
		return errNoRow
	}
	return f.exec(ctx, s, fmt.Sprintf("DELETE FROM %s WHERE %s", f.d.quote(t.name), f.where(cols, lits)))
}

// rekey changes a row's primary key. A row with children is copied to
// the new key, its children moved to the copy, and the old row deleted;
// a row without is updated in place.
func (f *fuzzer) rekey(ctx context.Context, s *session, t *table) error {
	pk, err := f.pick(ctx, s, t, t.pk)
	if err != nil {
		return err
	}
	newPK := make([]string, len(t.pk))
	moved := false
	for i, c := range t.pk {
		if fk := t.fkOf(c); fk != nil {
			newPK[i] = pk[i] // a key column that is also a reference stays
			continue
		}
		newPK[i] = f.keyPart(t, t.col(c))
		moved = true
	}
	if !moved {
		return errNoRow
	}
	f.remember(t, newPK)
	if len(t.refs) == 0 || f.v.chance(0.3) {
		return f.exec(ctx, s, fmt.Sprintf("UPDATE %s SET %s WHERE %s", f.d.quote(t.name),
			f.assign(t.pk, newPK), f.where(t.pk, pk)))
	}
	var rest []string
	for _, c := range t.cols {
		if !c.skip && !slices.Contains(t.pk, c.name) {
			rest = append(rest, c.name)
		}
	}
	sel := append(append([]string(nil), newPK...), func() []string {
		q := make([]string, len(rest))
		for i, c := range rest {
			q[i] = f.d.quote(c)
		}
		return q
	}()...)
	if err := f.exec(ctx, s, fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s", f.d.quote(t.name),
		f.quoteAll(append(append([]string(nil), t.pk...), rest...)), strings.Join(sel, ", "), f.d.quote(t.name), f.where(t.pk, pk))); err != nil {
		return err
	}
	for _, ref := range t.refs {
		// Only references to the primary key follow it.
		if !slices.Equal(ref.refCols, t.pk) {
			continue
		}
		child := f.s.tables[ref.child]
		if err := f.exec(ctx, s, fmt.Sprintf("UPDATE %s SET %s WHERE %s", f.d.quote(child.name),
			f.assign(ref.cols, newPK), f.where(ref.cols, pk))); err != nil {
			return err
		}
	}
	return f.exec(ctx, s, fmt.Sprintf("DELETE FROM %s WHERE %s", f.d.quote(t.name), f.where(t.pk, pk)))
}

// ordinals is "1, 2, …, n", an ORDER BY of every selected column.
func ordinals(n int) string {
	o := make([]string, n)
	for i := range o {
		o[i] = fmt.Sprint(i + 1)
	}
	return strings.Join(o, ", ")
}
