package syncfuzz

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Schema changes made while sync runs (Options.DDLRate), each of a kind
// the table of docs/sync.md ("Schema changes during sync") gives an
// outcome: sync goes on, re-derives the entities that read the table, or
// stops with exit 2 naming the table and the column. The oracle stays a
// fresh migrate: whatever sync did about a change, the table must end
// as a migrate of the source makes it. A stop is checked at once (exit 2
// and the message), then undone as its fix says, and sync started again.
//
// Every change keeps the mapping valid: the columns it drops, makes
// again, rewrites or gives a default are outside every key (the table's,
// a unique index, a foreign key, a join, an item's key template) and
// every filter, so that all rows taking one default makes no two items
// one; only the stops touch a mapped column otherwise, and they are
// undone.

// DefaultDDLRate is the share of operations that are schema changes when
// Options.DDLRate is 0: one in 500.
const DefaultDDLRate = 1.0 / 500

// outcome is what docs/sync.md says sync does about a change.
type outcome string

const (
	goesOn    outcome = "continue"
	rederives outcome = "rederive"
	stops     outcome = "stop"
)

// target is what one change applies to: a table, or a column of it.
type target struct {
	t *table
	c *column
}

// change is one drawn schema change, ready to run.
type change struct {
	kind    string
	outcome outcome
	table   string
	column  string
	stmts   []string
	// undo puts a stop's column back, as the fix sync prints says.
	undo []string
	// stopKinds are the kinds sync's stop may name (the message is
	// "table T column C … (kind); sync stopped with its state kept").
	stopKinds []string
	// narrowTo is a varchar's new length after narrowing (0: none).
	narrowTo int
}

// ddlKind is one kind of change: its outcome on each engine (none: the
// engine has no such change), how often it is drawn, what it may apply
// to now, and its statements for one target (nil: not possible now).
type ddlKind struct {
	name    string
	pg, my  outcome
	weight  int
	targets func(f *fuzzer) []target
	make    func(ctx context.Context, f *fuzzer, tg target) (*change, error)
}

func (k *ddlKind) on(engine string) outcome {
	if engine == "mysql" {
		return k.my
	}
	return k.pg
}

// ddlKinds are the changes drawn. The stops are drawn rarely: each costs
// a restart of sync.
var ddlKinds = []ddlKind{
	{name: "add_column", pg: goesOn, my: goesOn, weight: 8, targets: tables(anyTable), make: addUnmapped},
	{name: "drop_added_column", pg: goesOn, my: goesOn, weight: 6, targets: columns(added), make: dropAdded},
	{name: "widen_varchar", pg: goesOn, my: goesOn, weight: 8, targets: columns(mappedVarchar), make: widen},
	// A rewrite on PostgreSQL; a widening in place on MySQL.
	{name: "int_to_bigint", pg: rederives, my: goesOn, weight: 5, targets: columns(narrowInt), make: toBigint},
	{name: "float_to_double", pg: rederives, my: rederives, weight: 4, targets: columns(singleFloat), make: toDouble},
	{name: "set_default", pg: goesOn, my: goesOn, weight: 8, targets: columns(plain), make: setDefault},
	{name: "rebuild", my: goesOn, weight: 8, targets: tables(anyTable), make: rebuild},
	{name: "readd_column", pg: rederives, my: rederives, weight: 10, targets: columns(plain), make: readd},
	{name: "rewrite_using", pg: rederives, weight: 8, targets: columns(rewritable), make: rewrite},
	{name: "narrow_varchar", pg: rederives, my: rederives, weight: 5, targets: columns(narrowable), make: narrow},
	{name: "truncate_table", pg: rederives, my: rederives, weight: 5, targets: tables(leaf), make: truncateMapped},
	{name: "vacuum_full", pg: rederives, weight: 6, targets: tables(anyTable), make: vacuumFull},
	{name: "drop_mapped_column", pg: stops, my: stops, weight: 3, targets: columns(plain), make: dropMapped},
	{name: "rename_mapped_column", pg: stops, my: stops, weight: 3, targets: columns(renamable), make: renameMapped},
}

// ddlKindNames are the kinds' names in the table's order.
func ddlKindNames() []string {
	out := make([]string, len(ddlKinds))
	for i, k := range ddlKinds {
		out[i] = k.name
	}
	return out
}

// tables lists the mapped tables ok accepts, in name order.
func tables(ok func(f *fuzzer, t *table) bool) func(*fuzzer) []target {
	return func(f *fuzzer) []target {
		var out []target
		for _, t := range f.mapped {
			if ok(f, t) {
				out = append(out, target{t: t})
			}
		}
		return out
	}
}

// columns lists the columns of mapped tables ok accepts, in table and
// column order.
func columns(ok func(f *fuzzer, t *table, c *column) bool) func(*fuzzer) []target {
	return func(f *fuzzer) []target {
		var out []target
		for _, t := range f.mapped {
			for _, c := range t.cols {
				if !c.skip && ok(f, t, c) {
					out = append(out, target{t: t, c: c})
				}
			}
		}
		return out
	}
}

func anyTable(*fuzzer, *table) bool { return true }

// leaf: a table no foreign key references and no entity pre-joins, which
// TRUNCATE can empty without leaving children whose parents are gone.
// A table an entity reads through a where: filter is one too: the fuzzer
// found (photos, seeds 7 and 137263128) that sync's sweep after a
// TRUNCATE left that entity's items behind (it spares a filtered
// entity's items in collections no row of the filter makes, which may be
// another tenant's); sync now deletes the items of the rows its row index
// holds and the table lost (cdc's dropVanished).
func leaf(f *fuzzer, t *table) bool {
	return len(t.refs) == 0 && !f.reads.joined[t.name]
}

// added: a column the fuzzer added, which nothing reads.
func added(f *fuzzer, t *table, c *column) bool {
	return strings.HasPrefix(c.name, "fz_extra_") && !f.reads.mapped(t.name, c.name)
}

// keyless: a mapped column outside every key and filter (see the top).
func keyless(f *fuzzer, t *table, c *column) bool {
	return f.reads.mapped(t.name, c.name) && !t.inUnique(c.name) && t.fkOf(c.name) == nil && !t.referenced(c.name) &&
		!f.roles.isKey(t.name, c.name) && !f.roles.isJoinKey(t.name, c.name) && !f.reads.joins(t.name, c.name) &&
		!f.reads.filtered(t.name, c.name)
}

// plain: a keyless column of a type whose default the fuzzer writes.
func plain(f *fuzzer, t *table, c *column) bool {
	switch c.kind {
	case kInt, kBool, kNumeric, kFloat, kText, kDate, kTime, kEnum:
		return keyless(f, t, c)
	}
	return false
}

// retypable: a mapped column whose type may change, which no foreign
// key pairs with another (MySQL refuses that) and no filter names.
func retypable(f *fuzzer, t *table, c *column) bool {
	return f.reads.mapped(t.name, c.name) && !slices.Contains(t.pk, c.name) && t.fkOf(c.name) == nil &&
		!t.referenced(c.name) && !f.reads.filtered(t.name, c.name)
}

func isVarchar(c *column) bool {
	return c.kind == kText && c.maxLen > 0 && (c.typ == "character varying" || c.typ == "varchar")
}

func mappedVarchar(f *fuzzer, t *table, c *column) bool { return isVarchar(c) && retypable(f, t, c) }

// narrowable: a varchar whose values are fresh in no key: narrowed, the
// fresh values the fuzzer cuts to the length must not collide.
func narrowable(f *fuzzer, t *table, c *column) bool {
	return mappedVarchar(f, t, c) && !t.inUnique(c.name) && !f.roles.isKey(t.name, c.name)
}

func narrowInt(f *fuzzer, t *table, c *column) bool {
	switch c.typ {
	case "smallint", "integer", "int", "mediumint":
		return retypable(f, t, c)
	}
	return false
}

func singleFloat(f *fuzzer, t *table, c *column) bool {
	return (c.typ == "real" || c.typ == "float") && retypable(f, t, c)
}

// rewritable: a plain column with a USING expression that changes its
// values (rewrite).
func rewritable(f *fuzzer, t *table, c *column) bool { return c.kind != kEnum && plain(f, t, c) }

// renamable: a mapped column outside the primary key (the poke that
// makes PostgreSQL's log show the table names the key) and the filters.
func renamable(f *fuzzer, t *table, c *column) bool {
	return f.reads.mapped(t.name, c.name) && !slices.Contains(t.pk, c.name) && !f.reads.filtered(t.name, c.name)
}

// defaultLiteral is a value for column c of t, from the change's own
// generator.
func (f *fuzzer) defaultLiteral(t *table, c *column) string { return f.ddl.v.random(t, c) }

func addUnmapped(_ context.Context, f *fuzzer, tg target) (*change, error) {
	f.added++
	col := fmt.Sprintf("fz_extra_%d", f.added)
	typ, probe := "text", &column{name: col, kind: kText}
	if f.ddl.v.chance(0.5) {
		typ, probe = "integer", &column{name: col, kind: kInt, min: -1 << 31, max: 1<<31 - 1}
	}
	stmt := fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", f.d.quote(tg.t.name), f.d.quote(col), typ)
	if f.ddl.v.chance(0.5) {
		stmt += " DEFAULT " + f.defaultLiteral(tg.t, probe)
	}
	return &change{stmts: []string{stmt}}, nil
}

func dropAdded(_ context.Context, f *fuzzer, tg target) (*change, error) {
	return &change{stmts: []string{fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", f.d.quote(tg.t.name), f.d.quote(tg.c.name))}}, nil
}

// retypeTo changes tg's column to typ (and using, on PostgreSQL).
func retypeTo(ctx context.Context, f *fuzzer, tg target, typ, using string) (*change, error) {
	def, err := f.d.columnDef(ctx, f.db, tg.t.name, tg.c.name)
	if err != nil {
		return nil, err
	}
	if typ == "" {
		typ = def.typ
	}
	return &change{stmts: []string{f.d.retype(tg.t.name, tg.c.name, def, typ, using)}}, nil
}

func widen(ctx context.Context, f *fuzzer, tg target) (*change, error) {
	return retypeTo(ctx, f, tg, f.d.varchar(tg.c.maxLen+1+f.ddl.v.rng.IntN(40)), "")
}

func toBigint(ctx context.Context, f *fuzzer, tg target) (*change, error) {
	typ := "bigint"
	if tg.c.min == 0 && f.d.name() == "mysql" {
		typ += " unsigned"
	}
	return retypeTo(ctx, f, tg, typ, "")
}

func toDouble(ctx context.Context, f *fuzzer, tg target) (*change, error) {
	typ := "double precision"
	if f.d.name() == "mysql" {
		typ = "double"
	}
	return retypeTo(ctx, f, tg, typ, "")
}

// narrow shortens a varchar to a length its values still fit (and the
// fuzzer's fresh values, 8 characters, too).
func narrow(ctx context.Context, f *fuzzer, tg target) (*change, error) {
	var longest int
	q := fmt.Sprintf("SELECT coalesce(max(char_length(%s)), 0) FROM %s", f.d.quote(tg.c.name), f.d.quote(tg.t.name))
	if err := f.db.QueryRowContext(ctx, q).Scan(&longest); err != nil {
		return nil, err
	}
	longest = max(longest, 8)
	if longest >= tg.c.maxLen {
		return nil, nil
	}
	n := longest + f.ddl.v.rng.IntN(tg.c.maxLen-longest)
	ch, err := retypeTo(ctx, f, tg, f.d.varchar(n), "")
	if ch != nil {
		ch.narrowTo = n
	}
	return ch, err
}

// rewrite gives a PostgreSQL column its own type again, converted by an
// expression that changes every value: a table rewrite.
func rewrite(ctx context.Context, f *fuzzer, tg target) (*change, error) {
	c := f.d.quote(tg.c.name)
	var using string
	switch tg.c.kind {
	case kText:
		using = "upper(" + c + ")"
		if f.ddl.v.chance(0.5) {
			using = "lower(" + c + ")"
		}
	case kInt, kNumeric:
		using = "- " + c
	case kFloat:
		using = c + " * 2"
	case kBool:
		using = "NOT " + c
	case kDate:
		using = c + " + 1"
	case kTime:
		using = c + " + interval '1 hour'"
	default:
		return nil, nil
	}
	return retypeTo(ctx, f, tg, "", using)
}

func setDefault(_ context.Context, f *fuzzer, tg target) (*change, error) {
	return &change{stmts: []string{fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT %s",
		f.d.quote(tg.t.name), f.d.quote(tg.c.name), f.defaultLiteral(tg.t, tg.c))}}, nil
}

func rebuild(_ context.Context, f *fuzzer, tg target) (*change, error) {
	stmt := "OPTIMIZE TABLE " + f.d.quote(tg.t.name)
	if f.ddl.v.chance(0.5) {
		stmt = "ALTER TABLE " + f.d.quote(tg.t.name) + " FORCE"
	}
	return &change{stmts: []string{stmt}}, nil
}

// readd drops a mapped column and adds it again with a default, in one
// statement: every row's value is the default now, without row events.
func readd(ctx context.Context, f *fuzzer, tg target) (*change, error) {
	def, err := f.d.columnDef(ctx, f.db, tg.t.name, tg.c.name)
	if err != nil {
		return nil, err
	}
	return &change{stmts: []string{fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s, ADD COLUMN %s", f.d.quote(tg.t.name),
		f.d.quote(tg.c.name), f.d.columnClause(tg.c.name, def, f.defaultLiteral(tg.t, tg.c)))}}, nil
}

func truncateMapped(_ context.Context, f *fuzzer, tg target) (*change, error) {
	return &change{stmts: []string{"TRUNCATE TABLE " + f.d.quote(tg.t.name)}}, nil
}

func vacuumFull(_ context.Context, f *fuzzer, tg target) (*change, error) {
	return &change{stmts: []string{"VACUUM FULL " + f.d.quote(tg.t.name)}}, nil
}

// dropMapped drops a mapped column: sync must stop. The fix it names,
// adding the column back, is the undo; sync then re-derives.
func dropMapped(ctx context.Context, f *fuzzer, tg target) (*change, error) {
	def, err := f.d.columnDef(ctx, f.db, tg.t.name, tg.c.name)
	if err != nil {
		return nil, err
	}
	t := f.d.quote(tg.t.name)
	return &change{
		stmts:     []string{fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", t, f.d.quote(tg.c.name))},
		undo:      []string{fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s", t, f.d.columnClause(tg.c.name, def, f.defaultLiteral(tg.t, tg.c)))},
		stopKinds: []string{"column_dropped"},
	}, nil
}

// renameMapped renames a mapped column: sync must stop; renamed back, it
// goes on. Without its statement (a read that met the column gone, or a
// restart), MySQL cannot tell a rename from a drop, which the stop then
// says; nor can PostgreSQL when the column was made again (a new attnum)
// after sync last recorded it.
func renameMapped(_ context.Context, f *fuzzer, tg target) (*change, error) {
	t, from := f.d.quote(tg.t.name), tg.c.name
	to := "fz_was_" + from
	if len(to) > 60 {
		to = to[:60]
	}
	ch := &change{
		stmts:     []string{fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", t, f.d.quote(from), f.d.quote(to))},
		undo:      []string{fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", t, f.d.quote(to), f.d.quote(from))},
		stopKinds: []string{"column_renamed"},
	}
	if f.d.name() == "mysql" || f.remade[tg.t.name+"."+from] {
		// A column sync may not have seen made again yet: the column it
		// recorded is gone, and no column of its number is there.
		ch.stopKinds = append(ch.stopKinds, "column_dropped")
	}
	return ch, nil
}

// stopMessage matches what sync prints when it stops on ch: the table
// (schema-qualified or not), the column, one of the kinds.
func (ch *change) stopMessage() *regexp.Regexp {
	kinds := make([]string, len(ch.stopKinds))
	for i, k := range ch.stopKinds {
		kinds[i] = regexp.QuoteMeta(k)
	}
	return regexp.MustCompile(fmt.Sprintf(`table (?:\S+\.)?%s column %s .*\((?:%s)\); sync stopped with its state kept`,
		regexp.QuoteMeta(ch.table), regexp.QuoteMeta(ch.column), strings.Join(kinds, "|")))
}
