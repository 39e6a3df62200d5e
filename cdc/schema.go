package cdc

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dynafold/dynafold/source"
)

// Schema changes on mapped tables, judged in one place for both engines.
//
// A change source says where in its log a mapped table's definition may
// have changed (source.SchemaChange: MySQL with the statement parsed,
// PostgreSQL with nothing but the table), and reads the tables' shapes
// as they are now (source.Shaper). classify compares the shape sync
// recorded with the one the source has now, helped by the statement where
// there is one, and says for each change whether sync goes on, re-derives
// the entities that read the table (their rows changed without row
// events), or stops because no rerun of the same mapping can be exact.
// docs/sync.md has the same table for operators.

// SchemaAction is what sync does about a schema change.
type SchemaAction string

// The actions, from the mildest.
const (
	// ActContinue: the values sync reads are as they were.
	ActContinue SchemaAction = "continue"
	// ActRederive: values changed without row events; the entities that
	// read the table are derived again from the source as it is now.
	ActRederive SchemaAction = "rederive"
	// ActStop: the mapping cannot be applied to the table any more; sync
	// stops with exit 2 and the state kept.
	ActStop SchemaAction = "stop"
)

func (a SchemaAction) rank() int {
	switch a {
	case ActStop:
		return 2
	case ActRederive:
		return 1
	}
	return 0
}

// The kinds of change, as the report and the log name them.
const (
	KindColumnAdded      = "column_added"
	KindColumnDropped    = "column_dropped"
	KindColumnReadded    = "column_readded"
	KindColumnRenamed    = "column_renamed"
	KindTypeWidened      = "type_widened"
	KindTypeChanged      = "type_changed"
	KindColumnRedefined  = "column_redefined"
	KindDefaultChanged   = "default_changed"
	KindNotNullAdded     = "not_null_added"
	KindNotNullRemoved   = "not_null_removed"
	KindTableRewritten   = "table_rewritten"
	KindTableRebuilt     = "table_rebuilt"
	KindTableConverted   = "table_converted"
	KindTableRenamed     = "table_renamed"
	KindTableDropped     = "table_dropped"
	KindTableReplaced    = "table_replaced"
	KindTableTruncated   = "table_truncated"
	KindPrimaryKey       = "primary_key_changed"
	KindPartitionAdded   = "partition_attached"
	KindPartitionRemoved = "partition_detached"
	KindPartitions       = "partitions_changed"
	KindUnknownDDL       = "unknown_ddl"
)

// SchemaFinding is one schema change sync met, what it did about it and,
// for a stop, the fix.
type SchemaFinding struct {
	Table  string       `json:"table"`
	Column string       `json:"column,omitempty"`
	Kind   string       `json:"kind"`
	Action SchemaAction `json:"action"`
	What   string       `json:"what"`
	Fix    string       `json:"fix,omitempty"`
	// Sweep is set when rows may have left the table without row events
	// (TRUNCATE, a partition detached, a table replaced): the re-derive
	// ends with a sweep of the table's keys for items no row produces.
	Sweep bool `json:"sweep,omitempty"`
	// Entities and RowsRederived say what a re-derive read again.
	Entities      []string `json:"entities,omitempty"`
	RowsRederived int64    `json:"rows_rederived,omitempty"`
}

func (f SchemaFinding) String() string {
	s := "table " + f.Table
	if f.Column != "" {
		s += " column " + f.Column
	}
	return s + " " + f.What
}

// SchemaError stops sync on a schema change it cannot apply exactly.
type SchemaError struct {
	Finding SchemaFinding
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("%s (%s); sync stopped with its state kept. Fix: %s", e.Finding, e.Finding.Kind, e.Finding.Fix)
}

// The fixes a stop names.
const (
	fixMapping = "update the mapping to match (a changed mapping starts over: dynafold sync cleanup, then sync again), or undo the change and rerun sync, which then goes on from where it stopped"
	fixReadd   = "add the column back and rerun sync, which re-derives what reads it and goes on; or remove it from the mapping (a changed mapping starts over: dynafold sync cleanup, then sync again)"
	fixRename  = "rename it back and rerun sync, which goes on from where it stopped; or update the mapping to the new name (a changed mapping starts over: dynafold sync cleanup, then sync again)"
	fixKey     = "restore the primary key and rerun sync; or start over with the new key: dynafold sync cleanup, then sync again (the items are keyed by the rows' primary keys)"
	fixRederiv = "rerun with --on-schema-change rederive (the default), which reads the affected entities' rows again and goes on"
)

// schemaInput is what classify judges for one table.
type schemaInput struct {
	table string
	// mapped are the columns the mapping reads from the table.
	mapped []string
	// was is the shape sync recorded (nil: none recorded yet, nothing to
	// compare); now the shape the source has now (nil: the table is gone).
	was, now *source.TableShape
	// ddl is the statement the log carried, if any.
	ddl *source.DDL
	// truncated says the log emptied the table.
	truncated bool
	// renamedTo is where a table gone under its name is now, when the
	// source found it by its ID.
	renamedTo *source.TableRef
	// streaming is set once the stream is under way (not at its start,
	// after the source prepared the log for the tables as they are).
	streaming bool
}

// classify says what changed in one table and what sync does about each
// change.
func classify(in schemaInput) []SchemaFinding {
	var out []SchemaFinding
	add := func(col, kind string, act SchemaAction, what, fix string) {
		out = append(out, SchemaFinding{Table: in.table, Column: col, Kind: kind, Action: act, What: what, Fix: fix})
	}
	mapped := func(col string) bool { return slices.Contains(in.mapped, col) }
	if in.truncated {
		add("", KindTableTruncated, ActRederive, "was truncated", "")
		out[len(out)-1].Sweep = true
	}
	if in.now == nil {
		renamed := in.renamedTo
		if in.ddl != nil && in.ddl.NewName != nil {
			renamed = in.ddl.NewName
		}
		if renamed != nil {
			add("", KindTableRenamed, ActStop, "was renamed to "+renamed.String(), "rename it back and rerun sync; or update the mapping to the new name (a changed mapping starts over: dynafold sync cleanup, then sync again)")
		} else if in.ddl == nil && in.was != nil && in.was.ID == "" {
			// No table identity (MySQL) and no statement: a rename and a
			// drop look the same.
			add("", KindTableDropped, ActStop, "is gone (dropped, or renamed)", "restore the table, or rename it back, and rerun sync; or change the mapping (a changed mapping starts over: dynafold sync cleanup, then sync again)")
		} else {
			add("", KindTableDropped, ActStop, "was dropped", "restore the table and rerun sync; or remove it from the mapping (a changed mapping starts over: dynafold sync cleanup, then sync again)")
		}
		return out
	}
	if in.ddl != nil {
		out = append(out, classifyDDL(in, mapped)...)
	}
	if in.was == nil {
		return out
	}
	if in.was.ID != "" && in.now.ID != "" && in.was.ID != in.now.ID {
		// PostgreSQL: the publication lost the table when it was dropped,
		// and its new rows are not streamed until sync adds it again,
		// which Prepare does when sync starts.
		if in.streaming {
			add("", KindTableReplaced, ActStop, "was dropped and created again, and the publication does not carry the new table", "rerun sync: it adds the new table to the publication, reads the entities that use it again and goes on")
		} else {
			add("", KindTableReplaced, ActRederive, "was dropped and created again: its rows are read again", "")
			out[len(out)-1].Sweep = true
		}
		return out
	}
	said := func(col string) bool {
		for _, f := range out {
			if f.Column == col {
				return true
			}
		}
		return false
	}
	rewritten := in.was.Storage != "" && in.now.Storage != "" && in.was.Storage != in.now.Storage
	for _, col := range in.mapped {
		w, ok := in.was.Columns[col]
		if !ok {
			continue // recorded before the mapping read it
		}
		n, ok := in.now.Columns[col]
		switch {
		case said(col):
		case !ok:
			if other := columnNumbered(in.now, w.Num); other != "" {
				add(col, KindColumnRenamed, ActStop, "was renamed to "+other, fixRename)
			} else if w.Num == 0 && len(addedColumns(in.was, in.now)) > 0 {
				// No column numbers (MySQL, judged without its statement):
				// a new column may be this one renamed.
				add(col, KindColumnDropped, ActStop, "is gone (dropped, or renamed to one of "+strings.Join(addedColumns(in.was, in.now), ", ")+")", fixReadd+"; or, if it was renamed, "+fixRename)
			} else {
				add(col, KindColumnDropped, ActStop, "was dropped", fixReadd)
			}
		case w.Num != 0 && n.Num != 0 && w.Num != n.Num:
			add(col, KindColumnReadded, ActRederive, "was dropped and added again: its values changed without row events", "")
		case !sameType(w.Type, n.Type):
			if widens(w.Type, n.Type) && !rewritten {
				add(col, KindTypeWidened, ActContinue, fmt.Sprintf("was widened from %s to %s: every value is kept", w.Type, n.Type), "")
			} else {
				what := fmt.Sprintf("changed type from %s to %s", w.Type, n.Type)
				if rewritten {
					what += ", rewriting the table without row events"
				}
				add(col, KindTypeChanged, ActRederive, what, "")
			}
		case w.NotNull != n.NotNull:
			if n.NotNull {
				add(col, KindNotNullAdded, ActContinue, "became NOT NULL", "")
			} else {
				add(col, KindNotNullRemoved, ActContinue, "may be NULL now", "")
			}
		}
	}
	if !slices.Equal(in.was.Key, in.now.Key) && len(in.was.Key) > 0 && !said("") {
		add(strings.Join(in.now.Key, ", "), KindPrimaryKey, ActStop,
			fmt.Sprintf("is the primary key now (it was %s)", strings.Join(in.was.Key, ", ")), fixKey)
	}
	if rewritten && !anyAction(out, ActRederive) {
		add("", KindTableRewritten, ActRederive, "was rewritten (relfilenode "+in.was.Storage+" → "+in.now.Storage+"): VACUUM FULL, CLUSTER or ALTER … TYPE … USING leave the same trace, and the rows may have changed without row events", "")
	}
	out = append(out, partitionChanges(in)...)
	if in.ddl == nil {
		for col := range in.now.Columns {
			if _, ok := in.was.Columns[col]; !ok && !said(col) && !mapped(col) {
				add(col, KindColumnAdded, ActContinue, "was added", "")
			}
		}
		for col := range in.was.Columns {
			if _, ok := in.now.Columns[col]; !ok && !said(col) && !mapped(col) {
				add(col, KindColumnDropped, ActContinue, "was dropped; the mapping does not read it", "")
			}
		}
	}
	return out
}

// findRenamed looks for a table gone under its name by the ID recorded
// in its shape, where the source can.
func findRenamed(ctx context.Context, sh source.Shaper, was, now *source.TableShape) *source.TableRef {
	f, ok := sh.(source.TableFinder)
	if !ok || now != nil || was == nil || was.ID == "" {
		return nil
	}
	ref, found, err := f.TableByID(ctx, was.ID)
	if err != nil || !found {
		return nil
	}
	return &ref
}

// classifyDDL judges what the statement says it did, where the log holds
// it (MySQL): a column dropped and added in one statement has the same
// shape as before, and only the statement tells.
func classifyDDL(in schemaInput, mapped func(string) bool) []SchemaFinding {
	d := in.ddl
	var out []SchemaFinding
	add := func(col, kind string, act SchemaAction, what, fix string) {
		out = append(out, SchemaFinding{Table: in.table, Column: col, Kind: kind, Action: act, What: what, Fix: fix})
	}
	has := func(col string) bool { _, ok := in.now.Columns[col]; return ok }
	switch {
	case d.Unparsed:
		add("", KindUnknownDDL, ActRederive, "was changed by a statement dynafold cannot parse ("+clip(d.Statement)+"): its rows are read again", "")
		return out
	case d.Kind == source.DDLReplace:
		add("", KindTableReplaced, ActRederive, "was replaced by another table (CREATE OR REPLACE, or RENAME TABLE onto its name): its rows are read again", "")
		out[0].Sweep = true
		return out
	case d.Kind == source.DDLTruncate:
		return out // the truncation is a change of the transaction
	case d.Kind == source.DDLDrop, d.Kind == source.DDLRename && d.NewName != nil:
		// Gone at the statement, there again now: dropped (or renamed
		// away) and created again, as a script's DROP TABLE IF EXISTS
		// before CREATE does. Its rows are another table's.
		add("", KindTableReplaced, ActRederive, "was dropped and created again: its rows are read again", "")
		out[0].Sweep = true
		return out
	}
	if d.PrimaryKey && in.was != nil && !slices.Equal(in.was.Key, in.now.Key) {
		add("", KindPrimaryKey, ActStop, fmt.Sprintf("has another primary key (%s, it was %s)", strings.Join(in.now.Key, ", "), strings.Join(in.was.Key, ", ")), fixKey)
	}
	for _, col := range d.Dropped {
		switch {
		case !mapped(col):
		case slices.Contains(d.Added, col) || has(col):
			add(col, KindColumnReadded, ActRederive, "was dropped and added again: its values changed without row events", "")
		default:
			add(col, KindColumnDropped, ActStop, "was dropped", fixReadd)
		}
	}
	for _, old := range slices.Sorted(mapsKeys(d.Renamed)) {
		if !mapped(old) {
			continue
		}
		if has(old) {
			add(old, KindColumnReadded, ActRederive, "was renamed to "+d.Renamed[old]+" and a column of its name exists again: its rows are read again", "")
		} else {
			add(old, KindColumnRenamed, ActStop, "was renamed to "+d.Renamed[old], fixRename)
		}
	}
	for _, m := range d.Modified {
		if !mapped(m.Name) || m.Name != m.NewName {
			continue // renames were judged above
		}
		n, ok := in.now.Columns[m.Name]
		if !ok {
			add(m.Name, KindColumnDropped, ActStop, "is gone", fixReadd)
			continue
		}
		var w source.ColumnShape
		if in.was != nil {
			w = in.was.Columns[m.Name]
		}
		switch {
		case w.Type == "":
			add(m.Name, KindTypeChanged, ActRederive, "was redefined as "+n.Type+" (its old type was not recorded): its rows are read again", "")
		case !sameType(w.Type, n.Type) && widens(w.Type, n.Type):
			add(m.Name, KindTypeWidened, ActContinue, fmt.Sprintf("was widened from %s to %s: every value is kept", w.Type, n.Type), "")
		case !sameType(w.Type, n.Type):
			add(m.Name, KindTypeChanged, ActRederive, fmt.Sprintf("changed type from %s to %s: the table was rebuilt and its values converted without row events", w.Type, n.Type), "")
		case n.NotNull && !w.NotNull:
			// Outside strict mode MySQL turns the NULLs of a column made
			// NOT NULL into the type's zero value, without row events.
			add(m.Name, KindNotNullAdded, ActRederive, "became NOT NULL, which may have replaced NULLs without row events", "")
		case !n.NotNull && w.NotNull:
			add(m.Name, KindNotNullRemoved, ActContinue, "may be NULL now", "")
		default:
			add(m.Name, KindColumnRedefined, ActContinue, "was redefined with its type ("+n.Type+"): every value is kept", "")
		}
	}
	for _, col := range d.Defaults {
		if mapped(col) {
			add(col, KindDefaultChanged, ActContinue, "has another default: existing rows keep their values", "")
		}
	}
	for _, col := range d.Added {
		if !slices.Contains(d.Dropped, col) {
			add(col, KindColumnAdded, ActContinue, "was added", "")
		}
	}
	if d.Convert {
		add("", KindTableConverted, ActRederive, "was converted to another character set, which rewrote its text without row events", "")
	}
	if d.Partitions {
		add("", KindPartitions, ActRederive, "had partitions dropped, truncated, exchanged or reorganized: rows may have come or gone without row events", "")
		out[len(out)-1].Sweep = true
	}
	if d.Rebuild && len(out) == 0 {
		add("", KindTableRebuilt, ActContinue, "was rebuilt ("+clip(d.Statement)+"): every value is kept", "")
	}
	return out
}

// partitionChanges compares a partitioned table's partitions.
func partitionChanges(in schemaInput) []SchemaFinding {
	var out []SchemaFinding
	for _, p := range slices.Sorted(mapsKeys(in.now.Partitions)) {
		was, ok := in.was.Partitions[p]
		switch {
		case !ok:
			out = append(out, SchemaFinding{Table: in.table, Kind: KindPartitionAdded, Action: ActRederive, Sweep: true,
				What: "had partition " + p + " attached: its rows joined the table without row events"})
		case was != in.now.Partitions[p]:
			out = append(out, SchemaFinding{Table: in.table, Kind: KindTableRewritten, Action: ActRederive,
				What: "had partition " + p + " rewritten: its rows may have changed without row events"})
		}
	}
	for _, p := range slices.Sorted(mapsKeys(in.was.Partitions)) {
		if _, ok := in.now.Partitions[p]; !ok {
			out = append(out, SchemaFinding{Table: in.table, Kind: KindPartitionRemoved, Action: ActRederive, Sweep: true,
				What: "had partition " + p + " detached: its rows left the table without row events"})
		}
	}
	return out
}

// worst is the strongest action of the findings.
func worst(fs []SchemaFinding) (SchemaFinding, bool) {
	var w SchemaFinding
	found := false
	for _, f := range fs {
		if !found || f.Action.rank() > w.Action.rank() {
			w, found = f, true
		}
	}
	return w, found
}

func anyAction(fs []SchemaFinding, a SchemaAction) bool {
	for _, f := range fs {
		if f.Action == a {
			return true
		}
	}
	return false
}

// addedColumns are now's columns that was has not, sorted.
func addedColumns(was, now *source.TableShape) []string {
	var out []string
	for name := range now.Columns {
		if _, ok := was.Columns[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// columnNumbered is the name of now's column numbered num, or "".
func columnNumbered(now *source.TableShape, num int) string {
	if num == 0 {
		return ""
	}
	for name, c := range now.Columns {
		if c.Num == num {
			return name
		}
	}
	return ""
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// A type as the servers print it: a name, an optional argument list, and
// words after it ("int(10) unsigned", "character varying(40)",
// "numeric(12,2)", "timestamp(3) with time zone", "bigint unsigned").
var typeRE = regexp.MustCompile(`^([a-z ]+?)\s*\(([^)]*)\)\s*([a-z ]*)$`)

type typeParts struct {
	name string
	args []int
	rest string
}

func parseType(t string) (typeParts, bool) {
	t = strings.ToLower(strings.TrimSpace(t))
	m := typeRE.FindStringSubmatch(t)
	if m == nil {
		// No argument list: MySQL's sign and fill words follow the name.
		p := typeParts{name: t}
		for _, w := range []string{" zerofill", " unsigned"} {
			if n, ok := strings.CutSuffix(p.name, w); ok {
				p.name, p.rest = n, strings.TrimSpace(w+" "+p.rest)
			}
		}
		return p, true
	}
	p := typeParts{name: strings.TrimSpace(m[1]), rest: strings.TrimSpace(m[3])}
	for _, a := range strings.Split(m[2], ",") {
		n, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil {
			return typeParts{}, false
		}
		p.args = append(p.args, n)
	}
	return p, true
}

func sameType(a, b string) bool {
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b)) || (intDisplayWidthOnly(a, b))
}

// intDisplayWidthOnly: MySQL 5.7 and MariaDB print an integer's display
// width ("int(11)"), which says nothing about its values.
func intDisplayWidthOnly(a, b string) bool {
	pa, ok1 := parseType(a)
	pb, ok2 := parseType(b)
	return ok1 && ok2 && intRank[pa.name] > 0 && pa.name == pb.name && pa.rest == pb.rest
}

// The integer types, narrowest first; MySQL's and PostgreSQL's names.
var intRank = map[string]int{
	"tinyint": 1, "smallint": 2, "int2": 2, "mediumint": 3,
	"int": 4, "integer": 4, "int4": 4, "bigint": 5, "int8": 5,
}

// The text types whose values a longer one keeps; MySQL's and
// PostgreSQL's names.
var textRank = map[string]int{
	"tinytext": 1, "text": 2, "mediumtext": 3, "longtext": 4,
	"tinyblob": 1, "blob": 2, "mediumblob": 3, "longblob": 4,
}

// widens says whether every value of type from is the same value, printed
// the same way, in type to: the widenings that change nothing sync reads.
// A float made a double is not one: 0.1 as a float reads 0.100000001 as a
// double.
func widens(from, to string) bool {
	f, ok1 := parseType(from)
	t, ok2 := parseType(to)
	if !ok1 || !ok2 {
		return false
	}
	switch {
	case intRank[f.name] > 0 && intRank[t.name] > 0:
		fu, tu := strings.Contains(f.rest, "unsigned"), strings.Contains(t.rest, "unsigned")
		switch {
		case fu == tu:
			return intRank[t.name] >= intRank[f.name]
		case fu && !tu: // unsigned fits a wider signed type
			return intRank[t.name] > intRank[f.name]
		}
		return false
	case isVarLen(f.name) && isVarLen(t.name) && sameFamily(f.name, t.name):
		if len(f.args) == 1 && len(t.args) == 1 {
			return t.args[0] >= f.args[0] && f.rest == t.rest
		}
		return len(t.args) == 0 && f.rest == t.rest && textual(t.name) // varchar(n) → varchar, text
	case (f.name == "varchar" || f.name == "character varying") && textRank[t.name] > 0:
		return t.name != "tinytext" || (len(f.args) == 1 && f.args[0] <= 255)
	case textRank[f.name] > 0 && textRank[t.name] > 0:
		return strings.HasSuffix(f.name, "blob") == strings.HasSuffix(t.name, "blob") && textRank[t.name] >= textRank[f.name] && f.rest == t.rest
	case (f.name == "decimal" || f.name == "numeric") && f.name == t.name:
		// Precision up with the scale kept: every value is kept digit for
		// digit.
		if len(f.args) == 2 && len(t.args) == 2 {
			return t.args[1] == f.args[1] && t.args[0] >= f.args[0] && f.rest == t.rest
		}
		if len(f.args) == 1 && len(t.args) == 2 {
			return t.args[1] == 0 && t.args[0] >= f.args[0]
		}
		return len(f.args) > 0 && len(t.args) == 0 && f.rest == t.rest && f.name == "numeric" // unconstrained numeric
	}
	return false
}

func isVarLen(name string) bool {
	switch name {
	case "varchar", "character varying", "varbinary", "text":
		return true
	}
	return false
}

func textual(name string) bool { return name != "varbinary" }

func sameFamily(a, b string) bool {
	return (a == "varbinary") == (b == "varbinary")
}
