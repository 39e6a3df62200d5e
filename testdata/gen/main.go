// Command gen writes the example SQL datasets used by dynafold's tests and
// examples. Every dataset is written twice, as testdata/<name>/postgres.sql
// and testdata/<name>/mysql.sql, containing the same tables, columns and
// rows; only types and literal syntax differ between the two dialects.
//
// The output is fully deterministic: each dataset draws from its own
// SplitMix64 stream seeded from the dataset name, and no floating point
// arithmetic is used for generated values. Regenerate with:
//
//	go run ./testdata/gen            # writes into ./testdata
//	go run ./testdata/gen -out DIR   # writes into DIR
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

func main() {
	out := flag.String("out", "testdata", "output directory (one sub-directory per dataset is written)")
	quiet := flag.Bool("q", false, "do not print a summary")
	flag.Parse()

	sets, err := generate(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if *quiet {
		return
	}
	for _, ds := range sets {
		fmt.Printf("%s\n", ds.name)
		for _, t := range ds.tables {
			fmt.Printf("  %-22s %6d rows\n", t.name, len(t.rows))
		}
	}
}

// generate builds every dataset and writes its two SQL files below outDir.
func generate(outDir string) ([]*dataset, error) {
	sets := datasets()
	for _, ds := range sets {
		dir := filepath.Join(outDir, ds.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		for _, d := range []dialect{postgres, mysql} {
			data, err := ds.render(d)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", ds.name, d.file(), err)
			}
			if err := os.WriteFile(filepath.Join(dir, d.file()), data, 0o644); err != nil {
				return nil, err
			}
		}
	}
	return sets, nil
}

func datasets() []*dataset {
	return []*dataset{
		telemetryhub(),
		duda(),
		cart(),
		photos(),
		devices(),
		messages(),
		products(),
		votes(),
		alleycat(),
	}
}

// ---------------------------------------------------------------------------
// Deterministic random numbers (SplitMix64, integer only).

type rng struct{ s uint64 }

func newRNG(name string) *rng {
	// FNV-1a of the name, so each dataset has an independent stream and
	// editing one dataset does not reshuffle the others.
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return &rng{s: h}
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a value in [0, n).
func (r *rng) intn(n int) int {
	if n <= 0 {
		panic("intn: n <= 0")
	}
	return int(r.next() % uint64(n))
}

// between returns a value in [lo, hi].
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// chance reports true with probability pct/100.
func (r *rng) chance(pct int) bool { return r.intn(100) < pct }

// weighted returns an index into weights with probability proportional to
// its weight.
func (r *rng) weighted(weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	x := r.intn(total)
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	panic("unreachable")
}

func pick[T any](r *rng, xs []T) T { return xs[r.intn(len(xs))] }

func shuffle[T any](r *rng, xs []T) {
	for i := len(xs) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		xs[i], xs[j] = xs[j], xs[i]
	}
}

// perm returns a random permutation of 0..n-1.
func (r *rng) perm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	shuffle(r, p)
	return p
}

// timeIn returns a random second in [from, to).
func (r *rng) timeIn(from, to time.Time) time.Time {
	span := int(to.Sub(from) / time.Second)
	if span <= 0 {
		panic(fmt.Sprintf("timeIn: empty range %v..%v", from, to))
	}
	return from.Add(time.Duration(r.intn(span)) * time.Second)
}

// splitUneven splits total into n skewed parts, each at least minEach.
func splitUneven(r *rng, total, n, minEach int) []int {
	w := make([]int, n)
	sum := 0
	for i := range w {
		x := r.between(1, 10)
		w[i] = x * x
		sum += w[i]
	}
	rest := total - n*minEach
	counts := make([]int, n)
	got := 0
	for i := range w {
		counts[i] = minEach + rest*w[i]/sum
		got += counts[i]
	}
	for got < total {
		counts[r.intn(n)]++
		got++
	}
	return counts
}

func uuid4(r *rng) string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		x := r.next()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(x >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func hexString(r *rng, n int) string {
	const digits = "0123456789abcdef"
	var sb strings.Builder
	for i := 0; i < n; i++ {
		sb.WriteByte(digits[r.intn(16)])
	}
	return sb.String()
}

func utc(y int, m time.Month, d, hh, mm, ss int) time.Time {
	return time.Date(y, m, d, hh, mm, ss, 0, time.UTC)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ---------------------------------------------------------------------------
// Text helpers.

var asciiFold = map[rune]string{
	'à': "a", 'á': "a", 'â': "a", 'ã': "a", 'ä': "a", 'å': "a",
	'ç': "c", 'č': "c",
	'è': "e", 'é': "e", 'ê': "e", 'ë': "e",
	'ì': "i", 'í': "i", 'î': "i", 'ï': "i", 'ı': "i",
	'ł': "l", 'Ł': "l",
	'ñ': "n",
	'ò': "o", 'ó': "o", 'ô': "o", 'õ': "o", 'ö': "o", 'ø': "o", 'Ø': "o", 'ō': "o",
	'ş': "s", 'š': "s",
	'ù': "u", 'ú': "u", 'û': "u", 'ü': "u",
	'ý': "y", 'ž': "z",
	'Ö': "o", 'Ü': "u", 'Ä': "a", 'É': "e", 'Å': "a", 'Ś': "s",
}

// slug lowercases s, folds common accented letters to ASCII and keeps only
// [a-z0-9]; any other run of characters becomes sep (apostrophes vanish).
func slug(s, sep string) string {
	var sb strings.Builder
	pendingSep := false
	for _, c := range strings.ToLower(s) {
		if f, ok := asciiFold[c]; ok {
			c = rune(f[0])
		}
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			if pendingSep && sb.Len() > 0 {
				sb.WriteString(sep)
			}
			pendingSep = false
			sb.WriteRune(c)
		case c == '\'' || c == '\u2019':
			// "Jeff's" -> "jeffs"
		case c < utf8.RuneSelf:
			pendingSep = true
		default:
			// Non-Latin characters (e.g. 東京) are dropped.
			pendingSep = true
		}
	}
	return sb.String()
}

type person struct{ first, last string }

var firstNames = []string{
	"James", "Mary", "Wei", "Priya", "Aisha", "Kenji", "Yuki", "Olga", "Mateo", "Fatima",
	"Liam", "Emma", "Noah", "Olivia", "Ethan", "Ava", "Lucas", "Mia", "Hiroshi", "Sakura",
	"Raj", "Ananya", "Omar", "Leila", "Diego", "Sofia", "Jeff", "Sarah", "Michael", "Jessica",
	"David", "Laura", "Daniel", "Hannah", "Carlos", "Isabel", "Pierre", "Ingrid", "Nikolai", "Tatiana",
	"Kwame", "Ngozi", "Tomás", "Maeve", "Connor", "Aoife", "Dmitri", "Elena", "Ahmed", "Mariam",
	"Jin", "Min-jun", "Seo-yeon", "Thabo", "Zoë", "José", "Søren", "Björn", "Renée", "François",
	"Łukasz", "Siobhán", "Chloé", "Jürgen", "Amélie", "Mónica", "Grace", "Samuel", "Nora", "Felix",
}

var lastNames = []string{
	"Smith", "Johnson", "O'Brien", "Müller", "García", "Nguyen", "Kim", "Patel", "Chen", "Rossi",
	"D'Angelo", "O'Connor", "Schmidt", "Dubois", "Kowalski", "Novák", "Tanaka", "Sato", "Silva", "Santos",
	"Andersson", "Jensen", "Ivanova", "Okafor", "Mensah", "Haddad", "Cohen", "Levi", "Murphy", "Walsh",
	"Brown", "Williams", "Jones", "Taylor", "Martin", "Lefèvre", "Fernández", "Núñez", "Østergaard", "Yılmaz",
	"Papadopoulos", "MacDonald", "McKenzie", "Singh", "Sharma", "Wong", "Lee", "Park", "Hernández", "López",
	"Gonzalez", "Rodríguez", "Clarke", "Wright", "Hughes", "Evans", "Moreau", "Bianchi", "Nakamura", "Fischer",
}

func randomPerson(r *rng) person {
	return person{pick(r, firstNames), pick(r, lastNames)}
}

// ---------------------------------------------------------------------------
// Values and their SQL literals.

type dialect int

const (
	postgres dialect = iota
	mysql
)

func (d dialect) file() string {
	if d == postgres {
		return "postgres.sql"
	}
	return "mysql.sql"
}

type value interface {
	literal(d dialect) string
}

// ival is an integer.
type ival int64

func (v ival) literal(dialect) string { return strconv.FormatInt(int64(v), 10) }

// sval is a string (text, varchar, char, uuid, enum label).
type sval string

func (v sval) literal(d dialect) string { return quote(string(v), d) }

// dval is an exact decimal: units / 10^scale.
type dval struct {
	units int64
	scale int
}

func dec(units int64, scale int) dval { return dval{units, scale} }

func (v dval) String() string {
	neg := v.units < 0
	u := v.units
	if neg {
		u = -u
	}
	s := strconv.FormatInt(u, 10)
	if v.scale > 0 {
		for len(s) <= v.scale {
			s = "0" + s
		}
		s = s[:len(s)-v.scale] + "." + s[len(s)-v.scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func (v dval) literal(dialect) string { return v.String() }

// bval is a boolean (PostgreSQL boolean, MySQL TINYINT(1)).
type bval bool

func (v bval) literal(d dialect) string {
	switch {
	case d == postgres && bool(v):
		return "true"
	case d == postgres:
		return "false"
	case bool(v):
		return "1"
	default:
		return "0"
	}
}

// tval is a UTC timestamp with second precision.
type tval time.Time

func (v tval) literal(d dialect) string {
	t := time.Time(v)
	if t.Location() != time.UTC || t.Nanosecond() != 0 {
		panic(fmt.Sprintf("timestamp %v is not a whole UTC second", t))
	}
	s := t.Format("2006-01-02 15:04:05")
	if d == postgres {
		s += "+00"
	}
	return quote(s, d)
}

// null is SQL NULL.
type null struct{}

func (null) literal(dialect) string { return "NULL" }

// aval is a list of strings: PostgreSQL text[], MySQL JSON array.
type aval []string

func (v aval) literal(d dialect) string {
	if d == postgres {
		if len(v) == 0 {
			return "ARRAY[]::text[]"
		}
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = quote(s, d)
		}
		return "ARRAY[" + strings.Join(parts, ", ") + "]"
	}
	parts := make([]string, len(v))
	for i, s := range v {
		parts[i] = jsonString(s)
	}
	return quote("["+strings.Join(parts, ", ")+"]", d)
}

func jsonString(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(c)
		case c < 0x20:
			fmt.Fprintf(&sb, `\u%04x`, c)
		default:
			sb.WriteRune(c)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// quote renders a string literal. PostgreSQL files set
// standard_conforming_strings, so only quotes are doubled; MySQL also treats
// backslash as an escape character, so backslashes are doubled as well.
func quote(s string, d dialect) string {
	if !utf8.ValidString(s) {
		panic(fmt.Sprintf("invalid UTF-8 in %q", s))
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			panic(fmt.Sprintf("control character in %q", s))
		}
	}
	if d == mysql {
		s = strings.ReplaceAll(s, `\`, `\\`)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func compareValues(a, b value) int {
	switch x := a.(type) {
	case ival:
		y := b.(ival)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case sval:
		return strings.Compare(string(x), string(b.(sval)))
	case tval:
		return time.Time(x).Compare(time.Time(b.(tval)))
	}
	panic(fmt.Sprintf("cannot compare %T", a))
}

// ---------------------------------------------------------------------------
// Schema model and rendering.

type column struct {
	name     string
	pgType   string
	myType   string
	nullable bool
}

func col(name, pgType, myType string) column {
	return column{name: name, pgType: pgType, myType: myType}
}

func (c column) null() column { c.nullable = true; return c }

func intCol(name string) column    { return col(name, "integer", "INT") }
func bigintCol(name string) column { return col(name, "bigint", "BIGINT") }
func tsCol(name string) column     { return col(name, "timestamptz", "DATETIME(3)") }
func textCol(name, myType string) column {
	return col(name, "text", myType)
}
func varcharCol(name string, n int) column {
	return col(name, fmt.Sprintf("varchar(%d)", n), fmt.Sprintf("VARCHAR(%d)", n))
}
func numCol(name string, p, s int) column {
	return col(name, fmt.Sprintf("numeric(%d,%d)", p, s), fmt.Sprintf("DECIMAL(%d,%d)", p, s))
}

type foreignKey struct {
	cols    []string
	ref     string
	refCols []string
}

type table struct {
	name    string
	cols    []column
	pk      []string
	uniques [][]string
	fks     []foreignKey
	indexes [][]string // secondary (non-unique) indexes
	rows    [][]value
}

func (t *table) add(vals ...value) {
	if len(vals) != len(t.cols) {
		panic(fmt.Sprintf("%s: row has %d values, want %d", t.name, len(vals), len(t.cols)))
	}
	for i, v := range vals {
		if _, isNull := v.(null); isNull && !t.cols[i].nullable {
			panic(fmt.Sprintf("%s.%s: NULL in NOT NULL column", t.name, t.cols[i].name))
		}
	}
	t.rows = append(t.rows, vals)
}

func (t *table) colIndex(name string) int {
	for i, c := range t.cols {
		if c.name == name {
			return i
		}
	}
	panic(fmt.Sprintf("%s: no column %s", t.name, name))
}

// sortByPK orders rows by primary key and panics on duplicates.
func (t *table) sortByPK() {
	idx := make([]int, len(t.pk))
	for i, c := range t.pk {
		idx[i] = t.colIndex(c)
	}
	cmp := func(a, b []value) int {
		for _, i := range idx {
			if c := compareValues(a[i], b[i]); c != 0 {
				return c
			}
		}
		return 0
	}
	sort.SliceStable(t.rows, func(i, j int) bool { return cmp(t.rows[i], t.rows[j]) < 0 })
	for i := 1; i < len(t.rows); i++ {
		if cmp(t.rows[i-1], t.rows[i]) == 0 {
			panic(fmt.Sprintf("%s: duplicate primary key in row %d", t.name, i))
		}
	}
}

type pgEnum struct {
	name   string
	labels []string
}

type dataset struct {
	name    string
	summary []string // header comment lines
	enums   []pgEnum // PostgreSQL-only enum types
	tables  []*table // parents before children
}

const maxRowsPerInsert = 500

func ident(name string, d dialect) string {
	if d == mysql {
		return "`" + name + "`"
	}
	return name
}

func idents(names []string, d dialect) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = ident(n, d)
	}
	return strings.Join(out, ", ")
}

func (ds *dataset) render(d dialect) (data []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	for _, t := range ds.tables {
		t.sortByPK()
	}
	var b bytes.Buffer
	b.WriteString("-- Code generated by \"go run ./testdata/gen\"; DO NOT EDIT.\n")
	if d == postgres {
		fmt.Fprintf(&b, "-- Dataset %q for PostgreSQL (load with: psql -v ON_ERROR_STOP=1 -f %s/postgres.sql).\n", ds.name, ds.name)
	} else {
		fmt.Fprintf(&b, "-- Dataset %q for MySQL/MariaDB (load with: mariadb DBNAME < %s/mysql.sql).\n", ds.name, ds.name)
	}
	for _, line := range ds.summary {
		b.WriteString("-- " + line + "\n")
	}
	b.WriteString("\n")
	if d == postgres {
		b.WriteString("SET client_encoding = 'UTF8';\n")
		b.WriteString("SET standard_conforming_strings = on;\n")
	} else {
		b.WriteString("SET NAMES utf8mb4;\n")
	}
	b.WriteString("\n")

	for i := len(ds.tables) - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "DROP TABLE IF EXISTS %s;\n", ident(ds.tables[i].name, d))
	}
	if d == postgres {
		for _, e := range ds.enums {
			fmt.Fprintf(&b, "DROP TYPE IF EXISTS %s;\n", e.name)
		}
	}
	b.WriteString("\n")
	if d == postgres {
		for _, e := range ds.enums {
			labels := make([]string, len(e.labels))
			for i, l := range e.labels {
				labels[i] = quote(l, d)
			}
			fmt.Fprintf(&b, "CREATE TYPE %s AS ENUM (%s);\n\n", e.name, strings.Join(labels, ", "))
		}
	}
	for _, t := range ds.tables {
		writeCreate(&b, t, d)
	}
	for _, t := range ds.tables {
		writeInserts(&b, t, d)
	}
	return b.Bytes(), nil
}

func writeCreate(b *bytes.Buffer, t *table, d dialect) {
	var lines []string
	for _, c := range t.cols {
		typ := c.pgType
		if d == mysql {
			typ = c.myType
		}
		l := ident(c.name, d) + " " + typ
		if !c.nullable {
			l += " NOT NULL"
		}
		lines = append(lines, l)
	}
	if d == postgres {
		lines = append(lines, fmt.Sprintf("CONSTRAINT %s_pkey PRIMARY KEY (%s)", t.name, idents(t.pk, d)))
		for _, u := range t.uniques {
			lines = append(lines, fmt.Sprintf("CONSTRAINT %s_%s_key UNIQUE (%s)", t.name, strings.Join(u, "_"), idents(u, d)))
		}
	} else {
		lines = append(lines, fmt.Sprintf("PRIMARY KEY (%s)", idents(t.pk, d)))
		for _, u := range t.uniques {
			lines = append(lines, fmt.Sprintf("UNIQUE KEY %s (%s)", ident(t.name+"_"+strings.Join(u, "_")+"_key", d), idents(u, d)))
		}
		for _, ix := range t.indexes {
			lines = append(lines, fmt.Sprintf("KEY %s (%s)", ident(t.name+"_"+strings.Join(ix, "_")+"_idx", d), idents(ix, d)))
		}
	}
	for _, fk := range t.fks {
		lines = append(lines, fmt.Sprintf("CONSTRAINT %s FOREIGN KEY (%s) REFERENCES %s (%s)",
			ident(t.name+"_"+strings.Join(fk.cols, "_")+"_fkey", d), idents(fk.cols, d), ident(fk.ref, d), idents(fk.refCols, d)))
	}
	indent := "    "
	if d == mysql {
		indent = "  "
	}
	fmt.Fprintf(b, "CREATE TABLE %s (\n%s%s\n)", ident(t.name, d), indent, strings.Join(lines, ",\n"+indent))
	if d == mysql {
		b.WriteString(" ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
	}
	b.WriteString(";\n")
	if d == postgres {
		for _, ix := range t.indexes {
			name := t.name + "_" + strings.Join(ix, "_") + "_idx"
			fmt.Fprintf(b, "CREATE INDEX %s ON %s (%s);\n", name, t.name, idents(ix, d))
		}
	}
	b.WriteString("\n")
}

func writeInserts(b *bytes.Buffer, t *table, d dialect) {
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = c.name
	}
	fmt.Fprintf(b, "-- %s: %d rows\n", t.name, len(t.rows))
	for start := 0; start < len(t.rows); start += maxRowsPerInsert {
		end := min(start+maxRowsPerInsert, len(t.rows))
		fmt.Fprintf(b, "INSERT INTO %s (%s) VALUES\n", ident(t.name, d), idents(names, d))
		for i := start; i < end; i++ {
			b.WriteByte('(')
			for j, v := range t.rows[i] {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(v.literal(d))
			}
			b.WriteByte(')')
			if i < end-1 {
				b.WriteString(",\n")
			} else {
				b.WriteString(";\n")
			}
		}
	}
	b.WriteString("\n")
}

// ---------------------------------------------------------------------------
// 1. telemetryhub: accounts, users, service groups and the many-to-many
// user_service_groups membership table.

func telemetryhub() *dataset {
	r := newRNG("telemetryhub")

	accountsT := &table{
		name: "accounts",
		cols: []column{intCol("id"), textCol("name", "VARCHAR(255)"), textCol("plan", "VARCHAR(16)"), tsCol("created_at")},
		pk:   []string{"id"},
	}
	usersT := &table{
		name: "users",
		cols: []column{
			intCol("id"), intCol("account_id"), textCol("first_name", "VARCHAR(100)"), textCol("last_name", "VARCHAR(100)"),
			textCol("email", "VARCHAR(255)"), textCol("role", "VARCHAR(16)"), tsCol("created_at"),
		},
		pk:      []string{"id"},
		uniques: [][]string{{"email"}},
		fks:     []foreignKey{{[]string{"account_id"}, "accounts", []string{"id"}}},
		indexes: [][]string{{"account_id"}},
	}
	groupsT := &table{
		name:    "service_groups",
		cols:    []column{intCol("id"), intCol("account_id"), textCol("name", "VARCHAR(64)"), tsCol("created_at")},
		pk:      []string{"id"},
		uniques: [][]string{{"account_id", "name"}},
		fks:     []foreignKey{{[]string{"account_id"}, "accounts", []string{"id"}}},
	}
	usgT := &table{
		name: "user_service_groups",
		cols: []column{intCol("user_id"), intCol("service_group_id"), tsCol("granted_at")},
		pk:   []string{"user_id", "service_group_id"},
		fks: []foreignKey{
			{[]string{"user_id"}, "users", []string{"id"}},
			{[]string{"service_group_id"}, "service_groups", []string{"id"}},
		},
		indexes: [][]string{{"service_group_id"}},
	}

	type account struct {
		name, domain string
		created      time.Time
	}
	accounts := []account{
		{"Acme Robotics", "acmerobotics.com", time.Time{}},
		{"Bluebird Logistics", "bluebirdlogistics.com", time.Time{}},
		{"O'Malley Freight", "omalleyfreight.ie", time.Time{}},
		{"Müller Maschinenbau GmbH", "mueller-maschinenbau.de", time.Time{}},
		{"Northwind Traders", "northwindtraders.com", time.Time{}},
		{"Pixel & Pine Studio", "pixelandpine.studio", time.Time{}},
		{"東京 Data Works", "tokyodataworks.jp", time.Time{}},
		{"Helios Solar", "heliossolar.com", time.Time{}},
		{"Café Zoë", "cafezoe.fr", time.Time{}},
		{"Granite Peak Analytics", "granitepeak.io", time.Time{}},
		{"Lumen Health", "lumenhealth.org", time.Time{}},
		{"Redwood Fintech", "redwoodfintech.com", time.Time{}},
		{"Sørensen Shipping", "sorensenshipping.dk", time.Time{}},
		{"Quantum Quill", "quantumquill.co", time.Time{}},
		{"BrightPath Schools", "brightpathschools.org", time.Time{}},
		{"Tidewater Energy", "tidewater-energy.com", time.Time{}},
		{"Jeff's Plumbing Supply", "jeffsplumbingsupply.com", time.Time{}},
		{"Vértice Telecom", "vertice.com.br", time.Time{}},
		{"Nimbus Weather", "nimbusweather.io", time.Time{}},
		{"Orchard Lane Grocers", "orchardlanegrocers.co.uk", time.Time{}},
	}
	plans := []string{"free", "team", "enterprise"}
	for i := range accounts {
		a := &accounts[i]
		a.created = r.timeIn(utc(2021, 1, 1, 0, 0, 0), utc(2023, 7, 1, 0, 0, 0))
		plan := plans[r.weighted([]int{8, 8, 4})]
		accountsT.add(ival(i+1), sval(a.name), sval(plan), tval(a.created))
	}

	// Users: a fixed skewed distribution, randomly assigned to accounts and
	// interleaved so ids are not grouped by account.
	sizes := []int{48, 35, 30, 25, 22, 19, 17, 15, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 1}
	shuffle(r, sizes)
	var owners []int // account index per user, before shuffling
	for ai, n := range sizes {
		for k := 0; k < n; k++ {
			owners = append(owners, ai)
		}
	}
	shuffle(r, owners)
	type user struct {
		account int
		created time.Time
	}
	users := make([]user, len(owners))
	usedEmail := map[string]bool{}
	hasAdmin := map[int]bool{}
	roles := []string{"admin", "developer", "viewer"}
	for i, ai := range owners {
		a := accounts[ai]
		p := randomPerson(r)
		base := slug(p.first, "") + "." + slug(p.last, "")
		email := base + "@" + a.domain
		for n := 2; usedEmail[email]; n++ {
			email = fmt.Sprintf("%s%d@%s", base, n, a.domain)
		}
		usedEmail[email] = true
		role := roles[r.weighted([]int{10, 55, 35})]
		if !hasAdmin[ai] {
			role = "admin"
			hasAdmin[ai] = true
		}
		created := r.timeIn(a.created, utc(2024, 4, 1, 0, 0, 0))
		users[i] = user{ai, created}
		usersT.add(ival(i+1), ival(ai+1), sval(p.first), sval(p.last), sval(email), sval(role), tval(created))
	}

	// Service groups: 1-2 per account, plus extras for bigger accounts, 60 total.
	groupCount := make([]int, len(accounts))
	total := 0
	for ai, n := range sizes {
		groupCount[ai] = 2
		if n < 5 {
			groupCount[ai] = 1
		}
		total += groupCount[ai]
	}
	for total < 60 {
		ai := r.weighted(sizes)
		if groupCount[ai] < 7 {
			groupCount[ai]++
			total++
		}
	}
	groupNames := []string{"staging", "dev", "eu-prod", "us-prod", "qa", "sandbox", "ap-prod", "perf", "canary", "data-platform"}
	type group struct {
		account int
		name    string
		created time.Time
		id      int
	}
	var groups []*group
	for ai, n := range groupCount {
		names := append([]string(nil), groupNames...)
		shuffle(r, names)
		names = append([]string{"prod"}, names[:n-1]...)
		for _, nm := range names {
			groups = append(groups, &group{ai, nm, r.timeIn(accounts[ai].created, utc(2024, 1, 1, 0, 0, 0)), 0})
		}
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].created.Before(groups[j].created) })
	byAccount := map[int][]*group{}
	for i, g := range groups {
		g.id = i + 1
		byAccount[g.account] = append(byAccount[g.account], g)
		groupsT.add(ival(g.id), ival(g.account+1), sval(g.name), tval(g.created))
	}

	// Memberships: a handful of users have no groups, everyone else at least
	// one, topped up to exactly 600 with random extra grants within the
	// user's own account.
	type grant struct{ user, group int }
	chosen := map[grant]bool{}
	var pool []grant
	noGroups := map[int]bool{}
	for len(noGroups) < 6 {
		noGroups[r.intn(len(users))] = true
	}
	for ui, u := range users {
		if noGroups[ui] {
			continue
		}
		gs := byAccount[u.account]
		first := gs[r.intn(len(gs))]
		chosen[grant{ui, first.id}] = true
		for _, g := range gs {
			if g.id != first.id {
				pool = append(pool, grant{ui, g.id})
			}
		}
	}
	shuffle(r, pool)
	need := 600 - len(chosen)
	if need > len(pool) {
		panic("telemetryhub: not enough candidate grants")
	}
	for _, gr := range pool[:need] {
		chosen[gr] = true
	}
	var grants []grant
	for gr := range chosen {
		grants = append(grants, gr)
	}
	sort.Slice(grants, func(i, j int) bool {
		if grants[i].user != grants[j].user {
			return grants[i].user < grants[j].user
		}
		return grants[i].group < grants[j].group
	})
	for _, gr := range grants {
		from := maxTime(users[gr.user].created, groups[gr.group-1].created)
		usgT.add(ival(gr.user+1), ival(gr.group), tval(r.timeIn(from, utc(2024, 7, 1, 0, 0, 0))))
	}

	return &dataset{
		name: "telemetryhub",
		summary: []string{
			"Many-to-many with membership records: accounts -> users, accounts -> service_groups,",
			"and user_service_groups linking users to groups of their own account.",
		},
		tables: []*table{accountsT, usersT, groupsT, usgT},
	}
}

// ---------------------------------------------------------------------------
// 2. duda: sites, optional per-site membership settings and site members.

func duda() *dataset {
	r := newRNG("duda")

	sitesT := &table{
		name: "sites",
		cols: []column{varcharCol("alias", 64), textCol("name", "VARCHAR(255)"), textCol("owner_email", "VARCHAR(255)"), tsCol("created_at")},
		pk:   []string{"alias"},
	}
	membershipsT := &table{
		name: "site_memberships",
		cols: []column{
			varcharCol("site_alias", 64), col("enabled", "boolean", "TINYINT(1)"), col("restricted_pages", "text[]", "JSON"),
			textCol("signup_mode", "VARCHAR(16)"), tsCol("updated_at"),
		},
		pk:  []string{"site_alias"},
		fks: []foreignKey{{[]string{"site_alias"}, "sites", []string{"alias"}}},
	}
	membersT := &table{
		name: "members",
		cols: []column{
			varcharCol("site_alias", 64), col("uuid", "uuid", "CHAR(36)"), textCol("email", "VARCHAR(255)"),
			textCol("first_name", "VARCHAR(100)"), textCol("last_name", "VARCHAR(100)"), textCol("status", "VARCHAR(16)"), tsCol("created_at"),
		},
		pk:      []string{"site_alias", "uuid"},
		uniques: [][]string{{"site_alias", "email"}},
		fks:     []foreignKey{{[]string{"site_alias"}, "sites", []string{"alias"}}},
	}

	type biz struct{ slug, name string }
	businesses := []biz{
		{"plumbing", "Plumbing"}, {"bakery", "Bakery"}, {"dental", "Dental Care"}, {"yoga", "Yoga Studio"},
		{"florist", "Florist"}, {"law", "Law Office"}, {"photography", "Photography"}, {"auto-repair", "Auto Repair"},
		{"cafe", "Café"}, {"salon", "Hair Salon"}, {"fitness", "Fitness"}, {"landscaping", "Landscaping"},
		{"tattoo", "Tattoo Studio"}, {"pet-grooming", "Pet Grooming"}, {"books", "Books"}, {"pizzeria", "Pizzeria"},
		{"roofing", "Roofing"}, {"tutoring", "Tutoring"}, {"vineyard", "Vineyard"}, {"ceramics", "Ceramics"},
	}
	siteCities := []string{"Brooklyn", "Austin", "Portland", "Zürich", "Montréal", "Dublin", "Kraków", "Lisbon", "Denver", "Malmö", "Galway", "Asheville"}
	mailDomains := []string{"gmail.com", "yahoo.com", "outlook.com", "icloud.com", "proton.me", "hotmail.co.uk", "web.de", "orange.fr"}

	type site struct {
		alias   string
		created time.Time
	}
	var sites []site
	seen := map[string]bool{}
	addSite := func(alias, name, owner string) {
		seen[alias] = true
		s := site{alias, r.timeIn(utc(2020, 1, 1, 0, 0, 0), utc(2023, 10, 1, 0, 0, 0))}
		sites = append(sites, s)
		sitesT.add(sval(alias), sval(name), sval(owner), tval(s.created))
	}
	addSite("jeffs-plumbing", "Jeff's Plumbing", "jeff.morrison@gmail.com")
	addSite("zoe-bakery", "Zoë Bakery", "hello@zoe-bakery.com")
	for len(sites) < 60 {
		p := randomPerson(r)
		b := pick(r, businesses)
		var alias, name string
		switch r.weighted([]int{4, 2, 3, 2}) {
		case 0:
			alias, name = slug(p.first, "-")+"s-"+b.slug, p.first+"'s "+b.name
		case 1:
			alias, name = slug(p.first, "-")+"-"+b.slug, p.first+" "+b.name
		case 2:
			c := pick(r, siteCities)
			alias, name = slug(c, "-")+"-"+b.slug, c+" "+b.name
		default:
			alias, name = slug(p.last, "-")+"-and-sons-"+b.slug, p.last+" & Sons "+b.name
		}
		if seen[alias] {
			continue
		}
		var owner string
		if r.chance(50) {
			owner = slug(p.first, "") + "@" + alias + ".com"
		} else {
			owner = slug(p.first, "") + "." + slug(p.last, "") + "@" + pick(r, mailDomains)
		}
		addSite(alias, name, owner)
	}

	// 40 sites get membership settings; 30 of those have members.
	order := r.perm(len(sites))
	withMembership := order[:40]
	withMembers := append([]int(nil), withMembership...)
	shuffle(r, withMembers)
	withMembers = withMembers[:30]

	pages := []string{"/members", "/pricing", "/blog/premium", "/courses", "/downloads", "/community", "/events/vip", "/recipes", "/resources/guides", "/account/billing"}
	for _, si := range withMembership {
		s := sites[si]
		n := r.weighted([]int{5, 10, 10, 5, 3})
		pp := append([]string(nil), pages...)
		shuffle(r, pp)
		restricted := aval(pp[:n])
		mode := []string{"open", "approval", "invite"}[r.weighted([]int{5, 3, 2})]
		membershipsT.add(sval(s.alias), bval(r.chance(85)), restricted, sval(mode), tval(r.timeIn(s.created, utc(2024, 7, 1, 0, 0, 0))))
	}

	// A pool of people; some of them are members of several sites.
	type mperson struct {
		person
		email string
	}
	var people []mperson
	usedEmail := map[string]bool{}
	for len(people) < 260 {
		p := randomPerson(r)
		local := slug(p.first, "") + "." + slug(p.last, "")
		if r.chance(30) {
			local += strconv.Itoa(r.between(1, 99))
		}
		email := local + "@" + pick(r, mailDomains)
		if usedEmail[email] {
			continue
		}
		usedEmail[email] = true
		people = append(people, mperson{p, email})
	}
	counts := splitUneven(r, 400, len(withMembers), 1)
	statuses := []string{"active", "pending", "blocked"}
	for k, si := range withMembers {
		s := sites[si]
		for _, pi := range r.perm(len(people))[:counts[k]] {
			p := people[pi]
			status := statuses[r.weighted([]int{75, 15, 10})]
			membersT.add(sval(s.alias), sval(uuid4(r)), sval(p.email), sval(p.first), sval(p.last), sval(status),
				tval(r.timeIn(s.created, utc(2024, 7, 1, 0, 0, 0))))
		}
	}

	return &dataset{
		name: "duda",
		summary: []string{
			"Sites, optional per-site membership settings (site_memberships) and site members.",
			"60 sites; 40 have membership settings; 30 of those have members.",
		},
		tables: []*table{sitesT, membershipsT, membersT},
	}
}

// ---------------------------------------------------------------------------
// 3. cart: shopping-cart items keyed by (user_id, item_id) with a status.

func cart() *dataset {
	r := newRNG("cart")
	t := &table{
		name: "cart_items",
		cols: []column{
			intCol("user_id"), intCol("item_id"), col("status", "cart_status", "ENUM('ACTIVE','SAVED')"),
			textCol("product_name", "VARCHAR(255)"), intCol("quantity"), numCol("unit_price", 10, 2), tsCol("added_at"),
		},
		pk: []string{"user_id", "item_id"},
	}
	type product struct {
		name  string
		cents int64
	}
	catalog := []product{
		{"Merino Wool Socks (3-pack)", 2400}, {"Ceramic Pour-Over Coffee Dripper", 2899}, {"Kids' Rain Boots", 3495},
		{"Crème Brûlée Torch Kit", 3999}, {"Bamboo Cutting Board", 2250}, {"Stainless Steel Water Bottle 750ml", 2995},
		{"Noise-Cancelling Headphones", 24900}, {"USB-C Charging Cable 2m", 1299}, {"Mechanical Keyboard", 11900},
		{"Wireless Mouse", 3499}, {"27\" 4K Monitor", 37999}, {"Laptop Sleeve 14\"", 3200},
		{"Organic Cotton T-Shirt", 1800}, {"Selvedge Denim Jeans", 14800}, {"Rain Shell Jacket", 16500},
		{"Running Shoes", 12000}, {"Yoga Mat 6mm", 4500}, {"Adjustable Dumbbell", 19900},
		{"Cast Iron Skillet 12\"", 4495}, {"Chef's Knife 8\"", 8900}, {"French Press 1L", 3450},
		{"Matcha Whisk Set", 2600}, {"Sourdough Starter Kit", 1995}, {"Müsli Breakfast Jar", 1450},
		{"Scented Soy Candle", 2200}, {"Linen Duvet Cover (Queen)", 18900}, {"Wool Throw Blanket", 9800},
		{"Ceramic Table Lamp", 7400}, {"Blackout Curtains (2 panels)", 5900}, {"Houseplant Mister", 1250},
		{"Board Game: Ticket to Ride", 4499}, {"1000-Piece Puzzle: Kyōto Temples", 2399}, {"Wooden Train Set", 6900},
		{"Plush Fox", 1899}, {"Watercolor Paint Set", 2799}, {"Fountain Pen", 3600},
		{"A5 Dot Grid Notebook", 1650}, {"Reading Glasses +1.5", 2500}, {"Leather Wallet", 5500},
		{"Sunglasses (Polarized)", 8900}, {"Travel Adapter", 2900}, {"Packing Cubes (4-pack)", 3299},
		{"Trail Backpack 28L", 12900}, {"Headlamp 400lm", 3900}, {"Camping Mug", 1699},
		{"Dog Leash (Reflective)", 2100}, {"Cat Scratching Post", 4600}, {"Bird Feeder", 2750},
		{"Espresso Beans 1kg", 3200}, {"Earl Grey Tea (100g)", 1100}, {"Dark Chocolate Bar 85%", 450},
		{"Olive Oil 500ml", 1899}, {"Hot Sauce Sampler", 2400}, {"Vitamin D3 Drops", 1499},
		{"Electric Toothbrush", 7999}, {"Bath Towel Set", 5400}, {"Smart Plug (2-pack)", 2499},
		{"LED Desk Lamp", 4999}, {"Portable SSD 1TB", 10999}, {"Phone Case", 2999},
	}
	itemIDs := make([]int, len(catalog))
	for i := range catalog {
		itemIDs[i] = 5000 + i*17 + r.intn(17)
	}
	counts := splitUneven(r, 400, 50, 1)
	for u, n := range counts {
		if n > len(catalog) {
			panic("cart: too many items for one user")
		}
		for _, pi := range r.perm(len(catalog))[:n] {
			p := catalog[pi]
			status := "SAVED"
			if r.chance(60) {
				status = "ACTIVE"
			}
			qty := []int{1, 2, 3, 4, 5}[r.weighted([]int{60, 25, 10, 3, 2})]
			t.add(ival(u+1), ival(itemIDs[pi]), sval(status), sval(p.name), ival(qty), dec(p.cents, 2),
				tval(r.timeIn(utc(2024, 1, 1, 0, 0, 0), utc(2024, 7, 1, 0, 0, 0))))
		}
	}
	return &dataset{
		name:    "cart",
		summary: []string{"Shopping carts: cart_items keyed by (user_id, item_id) with an ACTIVE/SAVED status."},
		enums:   []pgEnum{{"cart_status", []string{"ACTIVE", "SAVED"}}},
		tables:  []*table{t},
	}
}

// ---------------------------------------------------------------------------
// 4. photos: per-user photos (multi-tenancy).

// photoCounts is the number of photos of users 1..20 (documented in
// docs/examples.md; tests rely on user 7 having exactly 25).
var photoCounts = []int{41, 12, 60, 8, 33, 19, 25, 4, 47, 15, 28, 6, 38, 22, 1, 52, 11, 30, 17, 31}

func photos() *dataset {
	r := newRNG("photos")
	t := &table{
		name: "photos",
		cols: []column{
			intCol("user_id"), intCol("photo_id"), textCol("url", "VARCHAR(512)"), textCol("caption", "TEXT").null(),
			intCol("width"), intCol("height"), tsCol("taken_at"),
		},
		pk: []string{"user_id", "photo_id"},
	}
	captions := []string{
		"Sunset over the harbour", "Zoë's first steps", "Cherry blossoms in 東京", "Brunch at Café Müller",
		"Rainy day in St. John's", "Grandma's apple pie", "Ski trip, day 3", "The view from the top!",
		"Morning fog on the lake", "Street art in São Paulo", "Our new puppy", "Northern lights over Tromsø",
		"Birthday dinner", "Road trip snacks", "Fireworks on New Year's Eve", "Hiking the Camino",
		"Lunch in Kraków's old town", "First snow of the season", "Concert night", "Beach day",
		"Farmers' market haul", "Cat vs. laptop", "Wedding toast", "Marathon finish line",
		"Late night ramen", "Autumn leaves", "Kids building a sandcastle", "Cozy reading nook",
	}
	dims := [][2]int{{4032, 3024}, {3024, 4032}, {1920, 1080}, {1080, 1920}, {4000, 3000}, {2048, 1536}, {1080, 1080}, {6000, 4000}}
	total := 0
	for u, n := range photoCounts {
		total += n
		times := make([]time.Time, n)
		for i := range times {
			times[i] = r.timeIn(utc(2023, 1, 1, 0, 0, 0), utc(2024, 7, 1, 0, 0, 0))
		}
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
		for i, ts := range times {
			var caption value = null{}
			if r.chance(70) {
				caption = sval(pick(r, captions))
			}
			d := pick(r, dims)
			url := fmt.Sprintf("https://cdn.picshare.example/u/%d/%s/%s.jpg", u+1, ts.Format("2006/01"), hexString(r, 16))
			t.add(ival(u+1), ival(i+1), sval(url), caption, ival(d[0]), ival(d[1]), tval(ts))
		}
	}
	if total != 500 || photoCounts[6] != 25 {
		panic("photos: counts changed")
	}
	return &dataset{
		name:    "photos",
		summary: []string{"Per-user photos keyed by (user_id, photo_id); photo_id runs 1..n per user. User 7 has exactly 25 photos."},
		tables:  []*table{t},
	}
}

// ---------------------------------------------------------------------------
// 5. devices: device status reports; only FAULT reports are escalated.

var technicians = []string{"tech-alice", "tech-bob", "tech-chen", "tech-dana"}

func devices() *dataset {
	r := newRNG("devices")
	t := &table{
		name: "device_reports",
		cols: []column{
			varcharCol("device_id", 32), tsCol("reported_at"), textCol("status", "VARCHAR(8)"),
			varcharCol("escalated_to", 64).null(), numCol("battery_pct", 5, 2), textCol("firmware", "VARCHAR(32)"),
		},
		pk: []string{"device_id", "reported_at"},
	}
	kinds := []string{"thermostat", "meter", "gateway", "sensor", "camera"}
	counts := splitUneven(r, 600, 30, 5)

	type report struct {
		device   string
		at       time.Time
		status   string
		battery  int64
		firmware string
	}
	var reports []*report
	seen := map[string]bool{}
	for _, n := range counts {
		var id string
		for id == "" || seen[id] {
			id = pick(r, kinds) + "-" + hexString(r, 6)
		}
		seen[id] = true
		at := r.timeIn(utc(2024, 6, 1, 0, 0, 0), utc(2024, 6, 3, 0, 0, 0))
		battery := int64(r.between(6000, 10000))
		firmware := pick(r, []string{"2.3.0", "2.3.4", "2.4.0"})
		upgradeAt := -1
		if r.chance(40) {
			upgradeAt = r.intn(n)
		}
		for i := 0; i < n; i++ {
			if i == upgradeAt {
				firmware = pick(r, []string{"2.4.1", "3.0.0-rc1"})
			}
			status := "OK"
			if battery < 2000 || r.chance(6) {
				status = "WARN"
			}
			reports = append(reports, &report{id, at, status, battery, firmware})
			at = at.Add(time.Duration(r.between(10*60, 45*60)) * time.Second)
			battery -= int64(r.between(10, 250))
			if battery < 1500 && r.chance(50) || battery < 500 {
				battery = int64(r.between(9500, 10000))
			}
		}
	}
	// Exactly 5% of reports are FAULTs, each escalated to a technician.
	faults := r.perm(len(reports))[:len(reports)/20]
	perTech := map[string]int{}
	escalated := map[*report]string{}
	for _, i := range faults {
		rep := reports[i]
		rep.status = "FAULT"
		tech := technicians[r.weighted([]int{40, 25, 20, 15})]
		escalated[rep] = tech
		perTech[tech]++
	}
	if len(perTech) != len(technicians) {
		panic("devices: not every technician has an escalation")
	}
	for _, rep := range reports {
		var esc value = null{}
		if tech, ok := escalated[rep]; ok {
			esc = sval(tech)
		}
		t.add(sval(rep.device), tval(rep.at), sval(rep.status), esc, dec(rep.battery, 2), sval(rep.firmware))
	}
	return &dataset{
		name: "devices",
		summary: []string{
			"Device status reports keyed by (device_id, reported_at).",
			"escalated_to is set exactly on the FAULT reports (5% of rows), NULL otherwise.",
		},
		tables: []*table{t},
	}
}

// ---------------------------------------------------------------------------
// 6. messages: chat messages over one month (TTL example).

func messages() *dataset {
	r := newRNG("messages")
	t := &table{
		name:    "messages",
		cols:    []column{bigintCol("id"), intCol("user_id"), textCol("body", "TEXT"), tsCol("created_at")},
		pk:      []string{"id"},
		indexes: [][]string{{"user_id", "created_at"}},
	}
	bodies := []string{
		"Hey, are we still on for lunch tomorrow?", "Running 10 minutes late, sorry!", "Can you send me the slides?",
		"Happy birthday! 🎉", "I'll call you back in five.", "Did you see the game last night?",
		"Thanks, that's perfect.", "Meeting moved to 3pm.", "Who's bringing the snacks?", "On my way",
		"Don't forget the tickets!", "Landed in 東京, heading to the hotel.", "Zoë says hi 👋",
		"Let's grab coffee at Café Müller", "The deploy went fine.", "Can't make it tonight, rain check?",
		"LOL", "ok", "Sounds good to me.", "Where did you park?", "Just pushed the fix, can you review?",
		"It's 25°C and sunny here ☀️", "Dinner at 7?", "Miss you!", "Reminder: dentist at 9am",
		"Is the Wi-Fi password still the same?", "Can you pick up milk on the way home?",
		"We're out of coffee again", "See you at the airport.", "Good luck with the interview!",
		"Here's the address: 12 O'Connell Street", "Merci beaucoup, à bientôt !", "Thanks for the ride.",
		"Just finished the book, what an ending", "Who's in for Friday drinks?", "The package arrived.",
		"Are you free this weekend?", "Call me when you get this.", "I've sent the invoice.", "Ugh, Mondays.",
	}
	counts := splitUneven(r, 300, 25, 1)
	type msg struct {
		user int
		body string
		at   time.Time
		id   int64
	}
	var msgs []*msg
	for u, n := range counts {
		for i := 0; i < n; i++ {
			msgs = append(msgs, &msg{u + 1, pick(r, bodies), r.timeIn(utc(2024, 5, 1, 0, 0, 0), utc(2024, 6, 1, 0, 0, 0)), 0})
		}
	}
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].at.Before(msgs[j].at) })
	// Snowflake-style ids: milliseconds since the Twitter epoch, worker and
	// sequence bits. They are time-ordered and exceed 32 bits.
	const twitterEpochMs = 1288834974657
	seq := map[int64]int64{}
	for _, m := range msgs {
		ms := m.at.UnixMilli() + int64(r.intn(1000))
		worker := int64(r.between(1, 31))
		m.id = (ms-twitterEpochMs)<<22 | worker<<12 | seq[ms]
		seq[ms]++
	}
	for _, m := range msgs {
		t.add(ival(m.id), ival(m.user), sval(m.body), tval(m.at))
	}
	return &dataset{
		name:    "messages",
		summary: []string{"Chat messages of 25 users during May 2024; ids are snowflake-style 64-bit integers."},
		tables:  []*table{t},
	}
}

// ---------------------------------------------------------------------------
// 7. products: one wide row per product (vertical partitioning).

func products() *dataset {
	r := newRNG("products")
	t := &table{
		name: "products",
		cols: []column{
			intCol("id"), textCol("name", "VARCHAR(255)"), textCol("description", "TEXT"), textCol("brand", "VARCHAR(100)"),
			textCol("category", "VARCHAR(64)"), numCol("price", 12, 2), col("currency", "char(3)", "CHAR(3)"),
			numCol("discount_pct", 5, 2).null(), intCol("stock"), textCol("warehouse", "VARCHAR(16)"), intCol("reorder_level"),
			numCol("weight_kg", 8, 3), tsCol("updated_at"),
		},
		pk: []string{"id"},
	}
	type noun struct {
		name               string
		minCents, maxCents int
		minGrams, maxGrams int
		use                string
	}
	categories := []struct {
		name  string
		nouns []noun
	}{
		{"Kitchen", []noun{
			{"Chef's Knife", 4500, 18900, 180, 320, "everyday prep work"},
			{"Cast Iron Skillet", 3500, 12000, 2200, 3900, "searing and baking"},
			{"Pour-Over Kettle", 3900, 14900, 600, 1200, "precise coffee brewing"},
			{"Stand Mixer", 19900, 64900, 5200, 11000, "bread dough and meringues"},
			{"Cutting Board", 1900, 8900, 700, 2600, "a busy kitchen"},
			{"Espresso Grinder", 12900, 49900, 2400, 6500, "espresso and filter coffee"},
		}},
		{"Outdoor", []noun{
			{"Trail Backpack", 7900, 24900, 900, 1800, "long days on the trail"},
			{"Down Sleeping Bag", 14900, 52900, 700, 1600, "cold nights in the backcountry"},
			{"Two-Person Tent", 19900, 69900, 1300, 3200, "weekend camping trips"},
			{"Trekking Poles", 4900, 18900, 350, 650, "steep descents"},
			{"Headlamp", 1900, 8900, 60, 180, "night hikes"},
		}},
		{"Electronics", []noun{
			{"Noise-Cancelling Headphones", 9900, 44900, 220, 350, "flights and open offices"},
			{"Mechanical Keyboard", 6900, 29900, 700, 1400, "long typing sessions"},
			{"USB-C Dock", 7900, 32900, 150, 600, "a one-cable desk setup"},
			{"Smart Thermostat", 9900, 24900, 200, 450, "saving energy at home"},
			{"4K Webcam", 5900, 19900, 90, 250, "video calls"},
			{"Portable SSD", 7900, 39900, 40, 120, "backups on the go"},
		}},
		{"Home", []noun{
			{"Linen Duvet Cover", 8900, 32900, 900, 1900, "warm summer nights"},
			{"Wool Throw Blanket", 5900, 19900, 800, 1600, "the sofa"},
			{"Ceramic Table Lamp", 4900, 21900, 1200, 3800, "reading corners"},
			{"Blackout Curtains", 3900, 14900, 1100, 2600, "bedrooms and nurseries"},
			{"Scented Candle", 1500, 6900, 200, 700, "slow evenings"},
		}},
		{"Apparel", []noun{
			{"Merino Crew Sweater", 6900, 21900, 250, 500, "layering in any season"},
			{"Rain Shell Jacket", 9900, 39900, 280, 600, "wet commutes"},
			{"Selvedge Denim Jeans", 8900, 26900, 600, 1000, "daily wear"},
			{"Running Shoes", 7900, 22900, 450, 800, "road and treadmill running"},
			{"Wool Beanie", 1900, 5900, 60, 140, "winter mornings"},
		}},
		{"Toys", []noun{
			{"Wooden Train Set", 3900, 14900, 1200, 3500, "ages 3 and up"},
			{"Kids' Art Easel", 4900, 15900, 3500, 8000, "young artists"},
			{"Building Blocks (250 pcs)", 2900, 8900, 900, 1800, "rainy afternoons"},
			{"Plush Fox", 1500, 4900, 150, 450, "bedtime"},
		}},
	}
	brands := []string{"Northwind", "Lumen", "Müller & Söhne", "O'Neill Outdoor", "Kōbō", "Arctic Fox", "Verdant", "Ironclad", "Pacifica", "Bellhaven", "Zephyr", "Sakura Home"}
	modifiers := []string{"", "Pro", "Classic", "Mini", "XL", "Eco", "Signature", "Lite", "Max", "Studio", "Everyday", "Heritage"}
	features := []string{
		"It's covered by a %d-year warranty.",
		"Designed in Zürich and assembled in Kraków.",
		"Made from 100% recycled materials.",
		"Customers say it's the best purchase they've made this year.",
		"Ships in plastic-free packaging.",
		"Dishwasher-safe parts make cleanup easy.",
		"Comes with a %d-year \"no questions asked\" guarantee.",
		"Tested by our crew on the Côte d'Azur and in the Scottish Highlands.",
		"Available while stocks last.",
		"Pairs well with the rest of the collection.",
	}
	currencies := []string{"USD", "EUR", "GBP", "JPY"}
	warehouses := []string{"SEA-1", "PDX-2", "FRA-1", "DUB-1", "NRT-1", "GRU-1"}
	discounts := []int64{500, 1000, 1250, 1500, 2000, 2500, 3333, 4000}
	used := map[string]bool{}
	for id := 1; id <= 200; {
		cat := pick(r, categories)
		n := pick(r, cat.nouns)
		brand := pick(r, brands)
		mod := pick(r, modifiers)
		name := brand + " " + n.name
		if mod != "" {
			name = brand + " " + mod + " " + n.name
		}
		if used[name] {
			continue
		}
		used[name] = true
		var desc strings.Builder
		fmt.Fprintf(&desc, "The %s is built for %s.", name, n.use)
		for _, fi := range r.perm(len(features))[:r.between(1, 3)] {
			f := features[fi]
			if strings.Contains(f, "%d") {
				f = fmt.Sprintf(f, r.between(1, 5))
			}
			desc.WriteString(" " + f)
		}
		currency := currencies[r.weighted([]int{60, 25, 10, 5})]
		cents := int64(r.between(n.minCents, n.maxCents))
		switch currency {
		case "JPY":
			cents = cents * 150 / 10000 * 10000 // whole hundreds of yen
		default:
			cents = cents/100*100 + []int64{0, 49, 95, 99}[r.intn(4)]
		}
		var discount value = null{}
		if r.chance(35) {
			discount = dec(pick(r, discounts), 2)
		}
		stock := r.between(0, 500)
		if r.chance(10) {
			stock = 0
		}
		t.add(ival(id), sval(name), sval(desc.String()), sval(brand), sval(cat.name), dec(cents, 2), sval(currency),
			discount, ival(stock), sval(pick(r, warehouses)), ival(5*r.between(1, 10)),
			dec(int64(r.between(n.minGrams, n.maxGrams)), 3), tval(r.timeIn(utc(2024, 1, 1, 0, 0, 0), utc(2024, 7, 1, 0, 0, 0))))
		id++
	}
	return &dataset{
		name:    "products",
		summary: []string{"200 wide product rows (catalog, pricing, inventory and shipping attributes)."},
		tables:  []*table{t},
	}
}

// ---------------------------------------------------------------------------
// 8. votes: a hot-key workload (write sharding).

// voteCounts is the number of votes for contestants 1..5 (documented in
// docs/examples.md).
var voteCounts = []int{310, 420, 800, 290, 180}

func votes() *dataset {
	r := newRNG("votes")
	t := &table{
		name: "votes",
		cols: []column{bigintCol("id"), intCol("contestant_id"), intCol("voter_id"), textCol("region", "VARCHAR(32)"), tsCol("cast_at")},
		pk:   []string{"id"},
	}
	var contestants []int
	for c, n := range voteCounts {
		for i := 0; i < n; i++ {
			contestants = append(contestants, c+1)
		}
	}
	if len(contestants) != 2000 {
		panic("votes: counts changed")
	}
	shuffle(r, contestants)
	start := utc(2024, 11, 16, 20, 0, 0)
	offsets := make([]int, len(contestants))
	for i := range offsets {
		// Voting opens at 20:00 for two hours; most votes arrive early.
		offsets[i] = min(r.intn(7200), r.intn(7200))
	}
	sort.Ints(offsets)
	regions := []string{"us-east", "us-west", "eu-west", "eu-central", "ap-northeast", "sa-east"}
	for i, c := range contestants {
		region := regions[r.weighted([]int{30, 20, 20, 12, 10, 8})]
		t.add(ival(i+1), ival(c), ival(r.between(1, 1400)), sval(region), tval(start.Add(time.Duration(offsets[i])*time.Second)))
	}
	return &dataset{
		name:    "votes",
		summary: []string{"2,000 votes for 5 contestants in a two-hour window; contestant 3 gets 40% of them."},
		tables:  []*table{t},
	}
}

// ---------------------------------------------------------------------------
// 9. alleycat: spin classes with per-second readings per racer.

// racer1Races are the races racer 1 rides in (race 13 is a long race).
var racer1Races = []int{2, 5, 9, 13}

func alleycat() *dataset {
	r := newRNG("alleycat")
	classesT := &table{
		name: "classes",
		cols: []column{intCol("id"), textCol("name", "VARCHAR(100)"), textCol("instructor", "VARCHAR(100)"), textCol("difficulty", "VARCHAR(16)")},
		pk:   []string{"id"},
	}
	racesT := &table{
		name:    "races",
		cols:    []column{intCol("id"), intCol("class_id"), tsCol("started_at"), intCol("duration_seconds")},
		pk:      []string{"id"},
		fks:     []foreignKey{{[]string{"class_id"}, "classes", []string{"id"}}},
		indexes: [][]string{{"class_id"}},
	}
	racersT := &table{
		name: "racers",
		cols: []column{intCol("id"), textCol("name", "VARCHAR(100)"), textCol("city", "VARCHAR(100)")},
		pk:   []string{"id"},
	}
	resultsT := &table{
		name: "race_results",
		cols: []column{intCol("race_id"), intCol("racer_id"), intCol("total_output"), numCol("avg_cadence", 6, 2), tsCol("finished_at")},
		pk:   []string{"race_id", "racer_id"},
		fks: []foreignKey{
			{[]string{"race_id"}, "races", []string{"id"}},
			{[]string{"racer_id"}, "racers", []string{"id"}},
		},
		indexes: [][]string{{"racer_id"}},
	}
	readingsT := &table{
		name: "race_readings",
		cols: []column{intCol("race_id"), intCol("racer_id"), intCol("second"), intCol("cadence"), intCol("resistance"), intCol("output")},
		pk:   []string{"race_id", "racer_id", "second"},
		fks:  []foreignKey{{[]string{"race_id", "racer_id"}, "race_results", []string{"race_id", "racer_id"}}},
	}

	classes := [][3]string{
		{"Climb & Conquer", "Zoë Ramírez", "advanced"},
		{"HIIT Sprint", "Marcus O'Neil", "advanced"},
		{"Endurance Ride", "Jonas Müller", "intermediate"},
		{"Rock 'n' Ride", "Priya Natarajan", "intermediate"},
		{"Recovery Spin", "Haruka 佐藤", "beginner"},
	}
	for i, c := range classes {
		classesT.add(ival(i+1), sval(c[0]), sval(c[1]), sval(c[2]))
	}

	racers := [][2]string{
		{"Siobhan O'Keefe", "Dublin"}, {"Mateo García", "Madrid"}, {"Zoë Laurent", "Montréal"}, {"Kenji Watanabe", "東京"},
		{"Amara Okafor", "Lagos"}, {"Lukas Müller", "Zürich"}, {"Priya Raman", "Bengaluru"}, {"Jake D'Souza", "Toronto"},
		{"Ingrid Solberg", "Oslo"}, {"Tomás Núñez", "Buenos Aires"}, {"Chloé Martin", "Lyon"}, {"Wei Zhang", "Singapore"},
		{"Hannah Schmidt", "Berlin"}, {"Liam Murphy", "Boston"}, {"Aisha Haddad", "Dubai"}, {"Björn Larsson", "Stockholm"},
		{"Sofia Rossi", "Milano"}, {"Noah Williams", "Austin"}, {"Yuki Sato", "Osaka"}, {"Fatima Zahra", "Casablanca"},
		{"Ethan Brooks", "Seattle"}, {"Maeve Walsh", "Galway"}, {"Łukasz Kowalski", "Kraków"}, {"Olivia Chen", "San Francisco"},
		{"Diego Alves", "São Paulo"}, {"Nora Jensen", "Copenhagen"}, {"Samuel Mensah", "Accra"}, {"Leila Farouk", "Cairo"},
		{"Connor McKenzie", "Edinburgh"}, {"Ana Silva", "Lisbon"},
	}
	for i, rc := range racers {
		racersT.add(ival(i+1), sval(rc[0]), sval(rc[1]))
	}

	// Races 1..12 last 300 s, races 13 and 14 last an hour. Each class has at
	// least two races; the long ones belong to the Endurance Ride class.
	raceClass := []int{1, 2, 3, 4, 5, 1, 2, 4, 5, 1, 2, 4, 3, 3}
	type race struct {
		id, class, dur int
		start          time.Time
	}
	starts := make([]time.Time, 14)
	for i := range starts {
		starts[i] = r.timeIn(utc(2024, 4, 1, 6, 0, 0), utc(2024, 7, 1, 0, 0, 0))
	}
	sort.Slice(starts[:12], func(i, j int) bool { return starts[i].Before(starts[j]) })
	sort.Slice(starts[12:], func(i, j int) bool { return starts[12+i].Before(starts[12+j]) })
	var races []race
	for i := 0; i < 14; i++ {
		dur := 300
		if i >= 12 {
			dur = 3600
		}
		rc := race{i + 1, raceClass[i], dur, starts[i]}
		races = append(races, rc)
		racesT.add(ival(rc.id), ival(rc.class), tval(rc.start), ival(rc.dur))
	}

	lineups := map[string]bool{}
	for _, rc := range races {
		var riders []int
		for _, id := range racer1Races {
			if id == rc.id {
				riders = append(riders, 1)
			}
		}
		for _, p := range r.perm(len(racers) - 1) {
			if len(riders) == 4 {
				break
			}
			riders = append(riders, p+2)
		}
		sort.Ints(riders)
		key := fmt.Sprint(riders)
		if lineups[key] {
			panic("alleycat: duplicate lineup")
		}
		lineups[key] = true

		// The instructor's resistance program, shared by every rider.
		program := make([]int, rc.dur)
		for s := 0; s < rc.dur; {
			seg := r.between(30, 90)
			level := r.between(4, 16)
			for k := 0; k < seg && s < rc.dur; k++ {
				program[s] = level
				s++
			}
		}
		for _, rider := range riders {
			base := r.between(78, 98)
			offset := r.between(-2, 2)
			cadence := base
			var sumOut, sumCad int64
			for s := 1; s <= rc.dur; s++ {
				res := clamp(program[s-1]+offset, 1, 20)
				target := base + (10 - res)
				cadence += r.between(-3, 3)
				if cadence < target-3 {
					cadence++
				} else if cadence > target+3 {
					cadence--
				}
				cadence = clamp(cadence, 60, 120)
				out := clamp(cadence*(res+4)/5+r.between(-6, 6), 50, 450)
				sumOut += int64(out)
				sumCad += int64(cadence)
				readingsT.add(ival(rc.id), ival(rider), ival(s), ival(cadence), ival(res), ival(out))
			}
			dur := int64(rc.dur)
			avgHundredths := (sumCad*200 + dur) / (2 * dur) // round half up
			resultsT.add(ival(rc.id), ival(rider), ival(sumOut), dec(avgHundredths, 2),
				tval(rc.start.Add(time.Duration(rc.dur)*time.Second)))
		}
	}
	if n := len(readingsT.rows); n != 12*4*300+2*4*3600 {
		panic(fmt.Sprintf("alleycat: %d readings", n))
	}
	return &dataset{
		name: "alleycat",
		summary: []string{
			"Spin classes: classes, races, racers, race_results and one race_readings row per",
			"racer per second. Races 1-12 last 300 s, races 13 and 14 last 3600 s.",
			"race_results.total_output = SUM(race_readings.output) for that race and racer.",
		},
		tables: []*table{classesT, racesT, racersT, resultsT, readingsT},
	}
}

func clamp(x, lo, hi int) int {
	return max(lo, min(hi, x))
}
