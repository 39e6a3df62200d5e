package mysql

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	tmysql "github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/types"
	// The parser needs a driver for the literals in statements (DEFAULT
	// values, partition bounds); this is the one without TiDB's runtime.
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/dynafold/dynafold/source"
)

// DDL read from the binlog is parsed with TiDB's SQL parser, the one
// go-mysql itself uses, into what the statement does to each table
// (source.DDL), for sync to judge.
//
// MariaDB syntax the parser rejects is handled in one of two ways. A few
// forms at the head of a statement are rewritten before parsing, because
// they say how the statement runs, not what it does to the table's
// columns: ALTER ONLINE, ALTER TABLE IF EXISTS and a WAIT n or NOWAIT
// after its table, RENAME TABLE[S] IF EXISTS, CREATE OR REPLACE (parsed
// as CREATE, reported as source.DDLReplace), and OPTIMIZE, which the
// parser lacks (parsed as ANALYZE, which takes the same table list).
// Anything else it rejects (MariaDB's uuid and inet6 types, INVISIBLE
// columns, WAIT after other statements, system versioning, versioned
// comments with six digits) is an error from parseDDL, and the decoder
// then reports every mapped table the statement names as Unparsed.
//
// A clause under IF EXISTS or IF NOT EXISTS is reported as if it applied:
// whether it did depends on the table at that point of the log, which
// sync learns by comparing shapes.

// maxStatement is how much of a statement's text a DDL keeps, for
// messages.
const maxStatement = 300

// tableDDL is what a statement does to one table.
type tableDDL struct {
	// Ref is the table; an empty Name stands for every table of
	// Ref.Schema (DROP DATABASE).
	Ref source.TableRef
	DDL *source.DDL
}

const (
	// leadingComments are the comments a logged statement may start with.
	leadingComments = `(?:/\*.*?\*/\s*|--(?:[ \t][^\n]*)?\n\s*|#[^\n]*\n\s*)*`
	// identifier is one part of a table name, quoted or not.
	identifier = "(?:`(?:[^`]|``)*`|[^\\s`.,;()]+)"
)

var (
	createOrReplace = regexp.MustCompile(`(?is)^(\s*` + leadingComments + `CREATE\s+)OR\s+REPLACE\s+`)
	alterHead       = regexp.MustCompile(`(?is)^(\s*` + leadingComments + `ALTER\s+)(?:ONLINE\s+)?(IGNORE\s+)?TABLE\s+(?:IF\s+EXISTS\s+)?(` +
		identifier + `(?:\s*\.\s*` + identifier + `)?)(?:\s+(?:WAIT\s+\d+|NOWAIT)\b)?`)
	renameHead   = regexp.MustCompile(`(?is)^(\s*` + leadingComments + `RENAME\s+)TABLES?\s+(?:IF\s+EXISTS\s+)?`)
	optimizeHead = regexp.MustCompile(`(?is)^(\s*` + leadingComments + `)OPTIMIZE\s+(?:(?:NO_WRITE_TO_BINLOG|LOCAL)\s+)?TABLES?\s+`)
)

// parseDDL says what a statement logged as a query does to each table it
// changes, in the order the statement names them. Tables named without a
// schema are in defaultSchema. Statements that change no table (CREATE
// TABLE, views, routines, DROP TEMPORARY TABLE) give nothing; a statement
// the parser rejects is an error.
func parseDDL(defaultSchema, stmt string) (out []tableDDL, err error) {
	// A parser built for another server's dialect is not trusted to never
	// panic on this one's statements: a panic is a statement not parsed.
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("parsing DDL %q: parser panic: %v", cut(stmt), r)
		}
	}()
	text, replace, optimize := normalizeDDL(stmt)
	p := parser.New()
	p.SetStrictDoubleTypeCheck(false) // the server took the statement
	nodes, _, err := p.Parse(text, "", "")
	if err != nil {
		return nil, fmt.Errorf("parsing DDL %q: %w", cut(stmt), err)
	}
	b := ddlBuilder{schema: defaultSchema, stmt: cut(stmt)}
	for _, n := range nodes {
		switch n := n.(type) {
		case *ast.AlterTableStmt:
			b.alter(n)
		case *ast.DropTableStmt:
			if n.IsView || n.TemporaryKeyword != ast.TemporaryNone {
				continue // a temporary table hides, not changes, the table
			}
			for _, t := range n.Tables {
				b.add(b.ref(t), source.DDLDrop)
			}
		case *ast.RenameTableStmt:
			pairs := make([][2]source.TableRef, len(n.TableToTables))
			for i, tt := range n.TableToTables {
				pairs[i] = [2]source.TableRef{b.ref(tt.OldTable), b.ref(tt.NewTable)}
			}
			b.renames(pairs)
		case *ast.TruncateTableStmt:
			b.add(b.ref(n.Table), source.DDLTruncate)
		case *ast.AnalyzeTableStmt:
			if optimize {
				for _, t := range n.TableNames {
					b.add(b.ref(t), source.DDLOptimize).Rebuild = true
				}
			}
		case *ast.CreateTableStmt:
			if replace && n.TemporaryKeyword == ast.TemporaryNone {
				b.add(b.ref(n.Table), source.DDLReplace)
			}
		case *ast.DropDatabaseStmt:
			b.add(source.TableRef{Schema: n.Name.O}, source.DDLDrop)
		case *ast.CreateDatabaseStmt:
			if replace {
				b.add(source.TableRef{Schema: n.Name.O}, source.DDLDrop)
			}
		case *ast.DropIndexStmt:
			b.add(b.ref(n.Table), source.DDLAlter).PrimaryKey = strings.EqualFold(n.IndexName, "PRIMARY")
		}
	}
	return b.out, nil
}

// normalizeDDL rewrites the MariaDB forms the parser rejects at the head
// of a statement (see the top of this file) and says whether it was a
// CREATE OR REPLACE or an OPTIMIZE.
func normalizeDDL(stmt string) (text string, replace, optimize bool) {
	text = stmt
	if createOrReplace.MatchString(text) {
		text, replace = createOrReplace.ReplaceAllString(text, "${1}"), true
	}
	if optimizeHead.MatchString(text) {
		text, optimize = optimizeHead.ReplaceAllString(text, "${1}ANALYZE TABLE "), true
	}
	text = alterHead.ReplaceAllString(text, "${1}${2}TABLE ${3}")
	text = renameHead.ReplaceAllString(text, "${1}TABLE ")
	return text, replace, optimize
}

// ddlBuilder collects a statement's tableDDLs.
type ddlBuilder struct {
	schema, stmt string
	out          []tableDDL
}

func (b *ddlBuilder) ref(t *ast.TableName) source.TableRef {
	r := source.TableRef{Schema: t.Schema.O, Name: t.Name.O}
	if r.Schema == "" {
		r.Schema = b.schema
	}
	return r
}

func (b *ddlBuilder) add(ref source.TableRef, kind source.DDLKind) *source.DDL {
	d := &source.DDL{Statement: b.stmt, Kind: kind}
	b.out = append(b.out, tableDDL{Ref: ref, DDL: d})
	return d
}

// alter reads ALTER TABLE's clauses. A clause it does not know is
// reported as Unparsed, so that sync re-derives the table rather than
// trust a partial reading.
func (b *ddlBuilder) alter(n *ast.AlterTableStmt) {
	ref := b.ref(n.Table)
	d := b.add(ref, source.DDLAlter)
	for _, s := range n.Specs {
		switch s.Tp {
		case ast.AlterTableAddColumns:
			for _, c := range s.NewColumns {
				d.Added = append(d.Added, c.Name.Name.O)
				if _, pk := nullability(c); pk {
					d.PrimaryKey = true
				}
			}
			for _, c := range s.NewConstraints {
				d.PrimaryKey = d.PrimaryKey || c.Tp == ast.ConstraintPrimaryKey
			}
		case ast.AlterTableDropColumn:
			d.Dropped = append(d.Dropped, s.OldColumnName.Name.O)
		case ast.AlterTableModifyColumn:
			c := s.NewColumns[0]
			d.PrimaryKey = modify(d, c.Name.Name.O, c) || d.PrimaryKey
		case ast.AlterTableChangeColumn:
			c := s.NewColumns[0]
			d.PrimaryKey = modify(d, s.OldColumnName.Name.O, c) || d.PrimaryKey
			if old, now := s.OldColumnName.Name.O, c.Name.Name.O; old != now {
				rename(d, old, now)
			}
		case ast.AlterTableRenameColumn:
			rename(d, s.OldColumnName.Name.O, s.NewColumnName.Name.O)
		case ast.AlterTableAlterColumn:
			d.Defaults = append(d.Defaults, s.NewColumns[0].Name.Name.O)
		case ast.AlterTableDropPrimaryKey:
			d.PrimaryKey = true
		case ast.AlterTableAddConstraint:
			d.PrimaryKey = d.PrimaryKey || s.Constraint.Tp == ast.ConstraintPrimaryKey
		case ast.AlterTableDropIndex:
			d.PrimaryKey = d.PrimaryKey || strings.EqualFold(s.Name, "PRIMARY")
		case ast.AlterTableRenameTable:
			to := b.ref(s.NewTable)
			d.NewName = &to
		case ast.AlterTableOption:
			for _, o := range s.Options {
				switch {
				case o.Tp == ast.TableOptionEngine, o.Tp == ast.TableOptionRowFormat:
					d.Rebuild = true
				case o.Tp == ast.TableOptionCharset && o.UintValue == ast.TableOptionCharsetWithConvertTo:
					d.Convert = true
				}
			}
		case ast.AlterTableForce, ast.AlterTableRebuildPartition, ast.AlterTableOptimizePartition:
			d.Rebuild = true
		case ast.AlterTableExchangePartition:
			// The other table's rows change places with the partition's.
			d.Partitions = true
			b.add(b.ref(s.NewTable), source.DDLAlter).Partitions = true
		case ast.AlterTableDropPartition, ast.AlterTableTruncatePartition, ast.AlterTableReorganizePartition, ast.AlterTableCoalescePartitions, ast.AlterTableRemovePartitioning,
			ast.AlterTablePartition, ast.AlterTableRepairPartition, ast.AlterTableDiscardPartitionTablespace,
			ast.AlterTableImportPartitionTablespace, ast.AlterTableDropFirstPartition,
			ast.AlterTableReorganizeFirstPartition, ast.AlterTableReorganizeLastPartition:
			d.Partitions = true
		case ast.AlterTableLock, ast.AlterTableAlgorithm, ast.AlterTableDropForeignKey, ast.AlterTableRenameIndex,
			ast.AlterTableIndexInvisible, ast.AlterTableEnableKeys, ast.AlterTableDisableKeys, ast.AlterTableAlterCheck,
			ast.AlterTableDropCheck, ast.AlterTableOrderByColumns, ast.AlterTableWithValidation,
			ast.AlterTableWithoutValidation, ast.AlterTableAddPartitions, ast.AlterTableCheckPartitions:
			// Indexes, constraints and how the statement runs: no value changes.
		default:
			d.Unparsed = true
		}
	}
	if d.NewName != nil && !sameTable(*d.NewName, ref) {
		b.add(*d.NewName, source.DDLReplace)
	}
}

// modify records a MODIFY or CHANGE of column name and says whether the
// new definition makes it the primary key.
func modify(d *source.DDL, name string, c *ast.ColumnDef) bool {
	notNull, pk := nullability(c)
	d.Modified = append(d.Modified, source.ColumnModify{Name: name, NewName: c.Name.Name.O, Type: columnType(c.Tp), NotNull: notNull})
	return pk
}

func rename(d *source.DDL, old, now string) {
	if d.Renamed == nil {
		d.Renamed = map[string]string{}
	}
	d.Renamed[old] = now
}

// nullability reads a column definition's options: the last NULL or NOT
// NULL wins, and PRIMARY KEY implies NOT NULL.
func nullability(c *ast.ColumnDef) (notNull, primaryKey bool) {
	for _, o := range c.Options {
		switch o.Tp {
		case ast.ColumnOptionNotNull:
			notNull = true
		case ast.ColumnOptionNull:
			notNull = false
		case ast.ColumnOptionPrimaryKey:
			notNull, primaryKey = true, true
		}
	}
	return notNull, primaryKey
}

// columnType prints a parsed type as information_schema's COLUMN_TYPE
// does on MariaDB and MySQL before 8.0.19: integer types keep their
// display width, whose default is one less when unsigned (bigint's
// excepted). MySQL 8.0.19 and later print integers without a width, and
// MariaDB prints json as longtext: there the text differs from the
// server's.
func columnType(ft *types.FieldType) string {
	if ft == nil {
		return ""
	}
	ft = ft.Clone()
	if ft.GetFlen() == types.UnspecifiedLength {
		switch ft.GetType() {
		case tmysql.TypeTiny, tmysql.TypeShort, tmysql.TypeInt24, tmysql.TypeLong:
			w, _ := tmysql.GetDefaultFieldLengthAndDecimal(ft.GetType())
			if tmysql.HasUnsignedFlag(ft.GetFlag()) {
				w--
			}
			ft.SetFlen(w)
		case tmysql.TypeYear:
			ft.SetFlen(4)
		}
	}
	s := ft.InfoSchemaStr()
	if tmysql.HasZerofillFlag(ft.GetFlag()) {
		s += " zerofill"
	}
	return s
}

// renames reads RENAME TABLE's pairs, which run in order. A table renamed
// away is DDLRename with the name it ends under. A name that ends up
// holding another table is DDLReplace: that is the cut-over of online
// schema tools (RENAME TABLE t TO t_old, t_new TO t), after which t's
// rows are another table's, which came without row events on t.
func (b *ddlBuilder) renames(pairs [][2]source.TableRef) {
	key := func(r source.TableRef) source.TableRef {
		return source.TableRef{Schema: strings.ToLower(r.Schema), Name: strings.ToLower(r.Name)}
	}
	holds := map[source.TableRef]*source.TableRef{} // name → the table it holds now (nil: none)
	var names []source.TableRef                     // in the order the statement first names them
	now := func(r source.TableRef) *source.TableRef {
		if h, ok := holds[key(r)]; ok {
			return h
		}
		names = append(names, r)
		return &r
	}
	for _, p := range pairs {
		t := now(p[0])
		now(p[1])
		holds[key(p[0])], holds[key(p[1])] = nil, t
	}
	for _, n := range names {
		switch h := holds[key(n)]; {
		case h == nil:
			for _, m := range names {
				if t := holds[key(m)]; t != nil && sameTable(*t, n) {
					to := m
					b.add(n, source.DDLRename).NewName = &to
				}
			}
		case !sameTable(*h, n):
			b.add(n, source.DDLReplace)
		}
	}
}

// sameTable compares table names as the decoder matches them: without
// regard to case, which is right where lower_case_table_names is set and
// costs a needless schema check where it is not.
func sameTable(a, b source.TableRef) bool {
	return strings.EqualFold(a.Schema, b.Schema) && strings.EqualFold(a.Name, b.Name)
}

// canonicalColumns returns a copy of d in which the names of columns that
// existed before the statement are spelled as the table spells them (t,
// as the stream knew it), since MySQL matches column names without
// regard to case. New names stay as written: the server keeps them so. A
// rename that only respells a column as the table already spells it is
// no rename.
func canonicalColumns(d *source.DDL, t *source.Table) *source.DDL {
	c := *d
	name := func(n string) string {
		if t != nil {
			for _, col := range t.Columns {
				if strings.EqualFold(col.Name, n) {
					return col.Name
				}
			}
		}
		return n
	}
	names := func(ns []string) []string {
		if ns == nil {
			return nil
		}
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = name(n)
		}
		return out
	}
	c.Added = append([]string(nil), d.Added...)
	c.Dropped, c.Defaults = names(d.Dropped), names(d.Defaults)
	c.Modified = nil
	for _, m := range d.Modified {
		if m.Name == m.NewName {
			m.NewName = name(m.Name)
		}
		m.Name = name(m.Name)
		c.Modified = append(c.Modified, m)
	}
	c.Renamed = nil
	for old, now := range d.Renamed {
		if old = name(old); old != now {
			if c.Renamed == nil {
				c.Renamed = map[string]string{}
			}
			c.Renamed[old] = now
		}
	}
	if d.NewName != nil {
		to := *d.NewName
		c.NewName = &to
	}
	return &c
}

// cut shortens a statement to maxStatement bytes, on a character
// boundary.
func cut(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxStatement {
		return s
	}
	i := maxStatement
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
