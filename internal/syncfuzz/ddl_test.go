package syncfuzz

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/cdc"
)

// A stop is recognised by the message sync prints (cdc.SchemaError): the
// table, schema-qualified or not, the column and one of the kinds the
// change may be; the same kind on another column, or another kind, is
// not the stop the change must make.
func TestStopMessageMatchesSync(t *testing.T) {
	dropped := &change{table: "documents", column: "title", stopKinds: []string{"column_dropped"}}
	renamed := &change{table: "documents", column: "body", stopKinds: []string{"column_renamed", "column_dropped"}}
	stop := func(table, col, kind, what string) string {
		return "dynafold: " + (&cdc.SchemaError{Finding: cdc.SchemaFinding{Table: table, Column: col, Kind: kind, Action: cdc.ActStop, What: what, Fix: "add it back"}}).Error()
	}
	for _, tc := range []struct {
		name string
		ch   *change
		out  string
		want bool
	}{
		{"dropped", dropped, stop("documents", "title", "column_dropped", "was dropped"), true},
		{"qualified", dropped, stop("public.documents", "title", "column_dropped", "was dropped"), true},
		{"gone, maybe renamed (MySQL)", renamed, stop("documents", "body", "column_dropped", "is gone (dropped, or renamed to one of fz_was_body)"), true},
		{"renamed", renamed, stop("documents", "body", "column_renamed", "was renamed to fz_was_body"), true},
		{"another column", dropped, stop("documents", "titles", "column_dropped", "was dropped"), false},
		{"another table", dropped, stop("folders", "title", "column_dropped", "was dropped"), false},
		{"another kind", dropped, stop("documents", "title", "column_renamed", "was renamed to x"), false},
		{"no stop", dropped, "dynafold: reading entity document rows by key: Unknown column 'src.title'", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.ch.stopMessage().MatchString(tc.out), tc.out)
		})
	}
}

// ddlFixture is a parent and a child table, mapped with a join, a key
// template, a unique column and a filter, with the roles and reads a
// mapping would give them.
func ddlFixture(engine string) *fuzzer {
	col := func(name, typ string, k kind, maxLen int) *column {
		return &column{name: name, typ: typ, kind: k, maxLen: maxLen, min: -1 << 31, max: 1<<31 - 1}
	}
	parent := &table{name: "parent", pk: []string{"id"}, uniques: [][]string{{"code"}},
		cols: []*column{col("id", "integer", kInt, 0), col("name", "text", kText, 0), col("code", "varchar", kText, 10), col("score", "real", kFloat, 0)}}
	child := &table{name: "child", pk: []string{"id"},
		cols: []*column{col("id", "integer", kInt, 0), col("parent_id", "integer", kInt, 0), col("note", "varchar", kText, 40),
			col("n", "integer", kInt, 0), col("sku", "text", kText, 0), col("flag", "text", kText, 0), col("fz_extra_1", "text", kText, 0),
			col("unread", "text", kText, 0)}}
	fk := &fkey{child: "child", parent: "parent", cols: []string{"parent_id"}, refCols: []string{"id"}}
	child.fks, parent.refs = []*fkey{fk}, []*fkey{fk}
	for _, t := range []*table{parent, child} {
		t.byName = map[string]*column{}
		for _, c := range t.cols {
			t.byName[c.name] = c
		}
	}
	read := map[string]map[string]bool{}
	for _, tc := range [][2]string{{"parent", "id"}, {"parent", "name"}, {"parent", "code"}, {"parent", "score"},
		{"child", "id"}, {"child", "parent_id"}, {"child", "note"}, {"child", "n"}, {"child", "sku"}, {"child", "flag"}} {
		mark(read, tc[0], tc[1])
	}
	r := &roles{key: map[string]map[string]bool{}, joinKey: map[string]map[string]bool{}}
	mark(r.key, "child", "sku")
	f := &fuzzer{o: Options{Engine: engine, Seed: 1, DDLRate: 1}, roles: r, mapped: []*table{child, parent},
		s: &schema{tables: map[string]*table{"parent": parent, "child": child}},
		reads: &reads{cols: read, filter: map[string]map[string]bool{"child": {"flag": true}},
			join: map[string]map[string]bool{"child": {"parent_id": true}, "parent": {"id": true}}, joined: map[string]bool{"parent": true}}}
	f.d, _ = dialectFor(engine)
	f.ddl = newDDLDraws(f.o, f)
	// No server: the kinds that read the catalog fail at once, which
	// the draws below say.
	f.db, _ = sql.Open(f.d.sqlDriver(), map[string]string{"postgres": "postgres://x@127.0.0.1:1/x?connect_timeout=1", "mysql": "x@tcp(127.0.0.1:1)/x?timeout=1s"}[engine])
	return f
}

// Each kind lists only what it may change and keep the mapping valid:
// nothing in a key, a join or a filter is dropped, made again, given a
// default or rewritten; only tables nothing joins or references are
// truncated; only the fuzzer's own columns are dropped as unmapped.
func TestDDLTargetsKeepTheMappingValid(t *testing.T) {
	f := ddlFixture("postgres")
	defer f.db.Close()
	names := func(ts []target) []string {
		var out []string
		for _, tg := range ts {
			n := tg.t.name
			if tg.c != nil {
				n += "." + tg.c.name
			}
			out = append(out, n)
		}
		return out
	}
	for _, tc := range []struct {
		kind string
		want []string
	}{
		{"add_column", []string{"child", "parent"}},
		{"drop_added_column", []string{"child.fz_extra_1"}},
		{"widen_varchar", []string{"child.note", "parent.code"}},
		{"int_to_bigint", []string{"child.n"}},
		{"float_to_double", []string{"parent.score"}},
		{"set_default", []string{"child.note", "child.n", "parent.name", "parent.score"}},
		{"readd_column", []string{"child.note", "child.n", "parent.name", "parent.score"}},
		{"rewrite_using", []string{"child.note", "child.n", "parent.name", "parent.score"}},
		{"narrow_varchar", []string{"child.note"}},
		// child, the one leaf (read through a where: filter, which sync
		// now follows through a TRUNCATE: see leaf).
		{"truncate_table", []string{"child"}},
		{"drop_mapped_column", []string{"child.note", "child.n", "parent.name", "parent.score"}},
		{"rename_mapped_column", []string{"child.parent_id", "child.note", "child.n", "child.sku", "parent.name", "parent.code", "parent.score"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			for _, k := range ddlKinds {
				if k.name == tc.kind {
					assert.Equal(t, tc.want, names(k.targets(f)))
					return
				}
			}
			t.Fatalf("no kind %s", tc.kind)
		})
	}
}

// The kinds that need no catalog read make their statements from the
// seed alone: two fuzzers of one seed draw the same changes, and each
// engine draws only its own kinds.
func TestDDLDrawIsTheSeeds(t *testing.T) {
	for _, engine := range []string{"postgres", "mysql"} {
		t.Run(engine, func(t *testing.T) {
			draw := func() []string {
				f := ddlFixture(engine)
				defer f.db.Close()
				var out []string
				for range 200 {
					ch, err := f.drawChange(context.Background())
					if err != nil {
						// A kind that reads the column's definition; the
						// fixture has no database. Its draw is made all the same.
						out = append(out, "needs the catalog")
						continue
					}
					require.NotNil(t, ch)
					out = append(out, ch.kind+": "+strings.Join(ch.stmts, "; "))
					switch ch.kind {
					case "vacuum_full", "rewrite_using":
						assert.Equal(t, "postgres", engine, ch.kind)
					case "rebuild":
						assert.Equal(t, "mysql", engine, ch.kind)
					}
				}
				return out
			}
			assert.Equal(t, draw(), draw())
		})
	}
}

// DDL comes at the rate asked for, one draw per operation, and never at
// a rate of 0 or less.
func TestDDLRate(t *testing.T) {
	count := func(rate float64) int {
		d := &ddlDraws{rate: rate, rng: rand.New(rand.NewPCG(7, 0xdd1))}
		n := 0
		for range 100_000 {
			if d.due() {
				n++
			}
		}
		return n
	}
	assert.InDelta(t, 200, count(DefaultDDLRate), 50)
	assert.Equal(t, 0, count(0))
	assert.Equal(t, 0, count(-1))
}

// A MySQL default as information_schema prints it becomes the literal
// the fuzzer's sessions read (NO_BACKSLASH_ESCAPES): restating it in a
// MODIFY keeps it as it was.
func TestUnquoteMySQL(t *testing.T) {
	d := myDialect{}
	for in, want := range map[string]string{
		`'plain'`:             `'plain'`,
		`'it''s'`:             `'it''s'`,
		`'a\\b'`:              `'a\b'`,
		`'line\nbreak'`:       "'line\nbreak'",
		`'é\'q'`:              `'é''q'`,
		`NULL`:                `NULL`,
		`42`:                  `42`,
		`current_timestamp()`: `current_timestamp()`,
		``:                    ``,
	} {
		assert.Equal(t, want, unquoteMySQL(d, in), in)
	}
}
