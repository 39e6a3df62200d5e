package syncfuzz

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// values makes the literals the fuzzer writes. Everything it decides comes
// from rng, and the counters behind fresh values start from what the
// source holds, so a seed always writes the same statements.
type values struct {
	rng   *rand.Rand
	d     dialect
	roles *roles
	// next is the next fresh integer per "table.column".
	next map[string]int64
	// counter numbers fresh values.
	counter int64
	// palette holds values the source already had, per table and column,
	// with the mapping's when: values: writing them again makes equal
	// join values, where: matches and index conditions likely.
	palette map[string]map[string][]string
	// large is the chance that a text or binary value is 8-16 KB.
	large float64
}

var epoch = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)

// load reads the palette and the fresh counters' starting points.
func (v *values) load(ctx context.Context, db *sql.DB, s *schema) error {
	v.next = map[string]int64{}
	v.palette = map[string]map[string][]string{}
	for _, tn := range s.names() {
		t := s.tables[tn]
		v.palette[tn] = map[string][]string{}
		for _, c := range t.cols {
			if c.kind == kInt {
				var m sql.NullInt64
				if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT max(%s) FROM %s", v.d.quote(c.name), v.d.quote(tn))).Scan(&m); err != nil {
					return fmt.Errorf("%s.%s: %w", tn, c.name, err)
				}
				v.next[tn+"."+c.name] = max(m.Int64+1, 1)
			}
			if c.kind == kOther || c.kind == kBytes {
				continue
			}
			rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT DISTINCT %s FROM %s WHERE %s IS NOT NULL ORDER BY 1 LIMIT 24",
				v.d.text(c.name), v.d.quote(tn), v.d.quote(c.name)))
			if err != nil {
				return fmt.Errorf("%s.%s: %w", tn, c.name, err)
			}
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					rows.Close()
					return err
				}
				// Long values make the palette no better, only slower.
				if len(s) <= 256 {
					v.palette[tn][c.name] = append(v.palette[tn][c.name], s)
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
	}
	for tn, cols := range v.roles.palette {
		for cn, vals := range cols {
			if v.palette[tn] != nil {
				v.palette[tn][cn] = append(v.palette[tn][cn], vals...)
			}
		}
	}
	return nil
}

// refresh starts the fresh counters of integer columns the schema has
// gained since load (a column added, or dropped and added again) past
// the column's maximum.
func (v *values) refresh(ctx context.Context, db *sql.DB, s *schema) error {
	for _, tn := range s.names() {
		for _, c := range s.tables[tn].cols {
			if _, ok := v.next[tn+"."+c.name]; ok || c.kind != kInt {
				continue
			}
			var m sql.NullInt64
			if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT max(%s) FROM %s", v.d.quote(c.name), v.d.quote(tn))).Scan(&m); err != nil {
				return fmt.Errorf("%s.%s: %w", tn, c.name, err)
			}
			v.next[tn+"."+c.name] = max(m.Int64+1, 1)
		}
	}
	return nil
}

func (v *values) chance(p float64) bool { return v.rng.Float64() < p }

// freshInt is an integer no row of the column holds yet.
func (v *values) freshInt(t *table, c *column) int64 {
	k := t.name + "." + c.name
	n := v.next[k]
	v.next[k] = n + 1
	return n
}

// freshText is text no row holds: lower case, so that a |lower filter
// in a key makes no collision, and short enough for the column.
func (v *values) freshText(c *column) string {
	v.counter++
	s := "fz" + strconv.FormatInt(v.counter, 36)
	if c.maxLen > 0 && len(s) > c.maxLen {
		s = s[len(s)-c.maxLen:]
	}
	return s
}

// fresh is a literal that no row of the column holds: for columns in an
// item key or a unique index.
func (v *values) fresh(t *table, c *column) string {
	switch c.kind {
	case kInt:
		return strconv.FormatInt(v.freshInt(t, c), 10)
	case kNumeric:
		v.counter++
		return strconv.FormatInt(v.counter%pow10(min(c.precision-c.scale, 9)), 10)
	case kTime:
		v.counter++
		return v.d.str(epoch.Add(time.Duration(v.counter) * time.Second).Format("2006-01-02 15:04:05"))
	case kDate:
		v.counter++
		return v.d.str(epoch.AddDate(0, 0, int(v.counter%10000)).Format("2006-01-02"))
	case kText:
		if v.roles.isNumber(t.name, c.name) {
			return v.d.str(strconv.FormatInt(v.freshInt(t, c), 10))
		}
		return v.d.str(v.freshText(c))
	}
	return v.random(t, c)
}

// value is a literal for column c of a row being written.
func (v *values) value(t *table, c *column) string {
	unique := t.inUnique(c.name) || v.roles.isKey(t.name, c.name)
	if v.roles.isIndex(t.name, c.name) && !unique {
		// A sparse index: its key column set to and from NULL.
		if c.nullable && v.chance(0.3) {
			return "NULL"
		}
		return v.fresh(t, c)
	}
	if unique {
		return v.fresh(t, c)
	}
	if c.nullable && v.chance(0.1) {
		return "NULL"
	}
	if p := v.palette[t.name][c.name]; len(p) > 0 && v.chance(0.3) {
		return v.d.str(p[v.rng.IntN(len(p))])
	}
	return v.random(t, c)
}

func pow10(n int) int64 {
	p := int64(1)
	for range max(n, 0) {
		p *= 10
	}
	return p
}

// random is a literal of the column's type, not necessarily fresh.
func (v *values) random(t *table, c *column) string {
	switch c.kind {
	case kInt:
		lo, hi := c.intRange()
		lo, hi = max(lo, -1000), min(hi, 1_000_000)
		return strconv.FormatInt(lo+v.rng.Int64N(hi-lo+1), 10)
	case kBool:
		if v.chance(0.5) {
			return "TRUE"
		}
		return "FALSE"
	case kNumeric:
		whole := pow10(min(c.precision-c.scale, 9))
		s := strconv.FormatInt(v.rng.Int64N(whole), 10)
		if c.scale > 0 {
			s += "." + fmt.Sprintf("%0*d", c.scale, v.rng.Int64N(pow10(min(c.scale, 9))))
		}
		if v.chance(0.1) {
			s = "-" + s
		}
		return s
	case kFloat:
		return strconv.FormatFloat(float64(v.rng.IntN(2_000_000)-1_000_000)/64, 'f', -1, 64)
	case kTime:
		return v.d.str(epoch.Add(time.Duration(v.rng.Int64N(29*365*24*3600)) * time.Second).Format("2006-01-02 15:04:05"))
	case kDate:
		return v.d.str(epoch.AddDate(0, 0, v.rng.IntN(29*365)).Format("2006-01-02"))
	case kJSON:
		return v.d.str(fmt.Sprintf(`{"n": %d, "s": %q, "a": [%d, %t]}`, v.rng.IntN(1000), v.word(8), v.rng.IntN(50), v.chance(0.5)))
	case kEnum:
		return v.d.str(c.enum[v.rng.IntN(len(c.enum))])
	case kBytes:
		n := v.rng.IntN(64)
		if (c.maxLen == 0 || c.maxLen >= 16384) && v.chance(v.large) {
			n = 8192 + v.rng.IntN(8192)
		}
		if c.maxLen > 0 {
			n = min(n, c.maxLen)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(v.rng.UintN(256))
		}
		return v.d.bytes(b)
	case kText:
		if v.roles.isNumber(t.name, c.name) {
			return v.d.str(strconv.Itoa(v.rng.IntN(100000)))
		}
		if (c.maxLen == 0 || c.maxLen >= 16384) && v.chance(v.large) {
			// Random letters do not compress, so PostgreSQL stores the
			// value out of line (TOAST) rather than inline.
			return v.d.str(v.word(8192 + v.rng.IntN(8192)))
		}
		n := 1 + v.rng.IntN(24)
		if c.maxLen > 0 {
			n = min(n, c.maxLen)
		}
		if v.chance(0.05) {
			n = 0
		}
		return v.d.str(v.text(n))
	}
	return "NULL"
}

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func (v *values) word(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[v.rng.IntN(len(letters))]
	}
	return string(b)
}

// text is n characters with spaces, quotes and non-ASCII letters now and
// then, which a decoder must carry as they are.
func (v *values) text(n int) string {
	var b strings.Builder
	for b.Len() < n {
		switch r := v.rng.IntN(40); {
		case r == 0:
			b.WriteString("'")
		case r == 1:
			b.WriteString("é")
		case r == 2:
			b.WriteString(`\`)
		case r < 8:
			b.WriteByte(' ')
		default:
			b.WriteByte(letters[v.rng.IntN(len(letters))])
		}
	}
	s := b.String()
	for len([]rune(s)) > n {
		r := []rune(s)
		s = string(r[:n])
	}
	return s
}
