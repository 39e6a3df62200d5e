package mysql

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
)

// Each statement kind that changes a table, MySQL's and MariaDB's forms,
// reads as what it does to each table it names; statements that change no
// table give nothing, and what the parser rejects is an error (the
// decoder then reports the mapped tables the statement names as
// Unparsed).
func TestParseDDL(t *testing.T) {
	items := source.TableRef{Schema: "shop", Name: "items"}
	ref := func(schema, name string) source.TableRef { return source.TableRef{Schema: schema, Name: name} }
	one := func(d source.DDL) []tableDDL { return []tableDDL{{Ref: items, DDL: &d}} }
	alter := func(d source.DDL) []tableDDL { d.Kind = source.DDLAlter; return one(d) }
	to := func(r source.TableRef) *source.TableRef { return &r }

	for _, tc := range []struct {
		name, stmt string
		want       []tableDDL
	}{
		{"add column", "ALTER TABLE items ADD COLUMN c int", alter(source.DDL{Added: []string{"c"}})},
		{"add columns, MariaDB IF NOT EXISTS", "ALTER TABLE items ADD COLUMN IF NOT EXISTS c int, ADD (d text, e int)",
			alter(source.DDL{Added: []string{"c", "d", "e"}})},
		{"add column that is the primary key", "ALTER TABLE items ADD f int PRIMARY KEY",
			alter(source.DDL{Added: []string{"f"}, PrimaryKey: true})},
		{"drop columns", "ALTER TABLE items DROP note, DROP COLUMN qty", alter(source.DDL{Dropped: []string{"note", "qty"}})},
		{"drop column, MariaDB IF EXISTS", "ALTER TABLE items DROP COLUMN IF EXISTS note", alter(source.DDL{Dropped: []string{"note"}})},
		{"drop and add again", "ALTER TABLE items DROP qty, ADD qty text",
			alter(source.DDL{Added: []string{"qty"}, Dropped: []string{"qty"}})},
		{"modify", "ALTER TABLE items MODIFY qty bigint unsigned NOT NULL",
			alter(source.DDL{Modified: []source.ColumnModify{{Name: "qty", NewName: "qty", Type: "bigint(20) unsigned", NotNull: true}}})},
		{"modify column, last of NULL and NOT NULL wins", "ALTER TABLE items MODIFY COLUMN qty int NOT NULL NULL",
			alter(source.DDL{Modified: []source.ColumnModify{{Name: "qty", NewName: "qty", Type: "int(11)"}}})},
		{"change with a new name", "ALTER TABLE items CHANGE name title varchar(60) NOT NULL",
			alter(source.DDL{Modified: []source.ColumnModify{{Name: "name", NewName: "title", Type: "varchar(60)", NotNull: true}},
				Renamed: map[string]string{"name": "title"}})},
		{"change under the same name", "ALTER TABLE items CHANGE COLUMN qty qty smallint NULL",
			alter(source.DDL{Modified: []source.ColumnModify{{Name: "qty", NewName: "qty", Type: "smallint(6)"}}})},
		{"rename column", "ALTER TABLE items RENAME COLUMN name TO title", alter(source.DDL{Renamed: map[string]string{"name": "title"}})},
		{"defaults", "ALTER TABLE items ALTER COLUMN qty SET DEFAULT 3, ALTER note DROP DEFAULT",
			alter(source.DDL{Defaults: []string{"qty", "note"}})},
		{"primary key dropped and added", "ALTER TABLE items DROP PRIMARY KEY, ADD PRIMARY KEY (id, sku)", alter(source.DDL{PrimaryKey: true})},
		{"primary key as a named constraint", "ALTER TABLE items ADD CONSTRAINT pk PRIMARY KEY (id)", alter(source.DDL{PrimaryKey: true})},
		{"index, ALGORITHM and LOCK are no change", "ALTER TABLE items ADD UNIQUE KEY (sku), ALGORITHM=INPLACE, LOCK=NONE", alter(source.DDL{})},
		{"drop the primary key as an index", "DROP INDEX `PRIMARY` ON items", alter(source.DDL{PrimaryKey: true})},
		{"drop an index", "DROP INDEX sku ON items", alter(source.DDL{})},
		{"rename to", "ALTER TABLE items RENAME TO items_old", []tableDDL{
			{Ref: items, DDL: &source.DDL{Kind: source.DDLAlter, NewName: to(ref("shop", "items_old"))}},
			{Ref: ref("shop", "items_old"), DDL: &source.DDL{Kind: source.DDLReplace}}}},
		{"rename into another schema", "ALTER TABLE shop.items RENAME archive.items", []tableDDL{
			{Ref: items, DDL: &source.DDL{Kind: source.DDLAlter, NewName: to(ref("archive", "items"))}},
			{Ref: ref("archive", "items"), DDL: &source.DDL{Kind: source.DDLReplace}}}},
		{"force", "ALTER TABLE items FORCE", alter(source.DDL{Rebuild: true})},
		{"engine", "ALTER TABLE items ENGINE=InnoDB", alter(source.DDL{Rebuild: true})},
		{"convert", "ALTER TABLE items CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", alter(source.DDL{Convert: true})},
		{"default charset converts nothing", "ALTER TABLE items DEFAULT CHARSET utf8mb4", alter(source.DDL{})},
		{"drop partition", "ALTER TABLE items DROP PARTITION p1", alter(source.DDL{Partitions: true})},
		{"truncate partition", "ALTER TABLE items TRUNCATE PARTITION p1, p2", alter(source.DDL{Partitions: true})},
		{"reorganize partition", "ALTER TABLE items REORGANIZE PARTITION p1 INTO (PARTITION p2 VALUES LESS THAN (10), PARTITION p3 VALUES LESS THAN MAXVALUE)",
			alter(source.DDL{Partitions: true})},
		{"coalesce partition", "ALTER TABLE items COALESCE PARTITION 2", alter(source.DDL{Partitions: true})},
		{"remove partitioning", "ALTER TABLE items REMOVE PARTITIONING", alter(source.DDL{Partitions: true})},
		{"add partition moves no rows in or out", "ALTER TABLE items ADD PARTITION (PARTITION p9 VALUES LESS THAN (90))", alter(source.DDL{})},
		{"exchange partition changes both tables", "ALTER TABLE items EXCHANGE PARTITION p1 WITH TABLE archive.items_p1", []tableDDL{
			{Ref: items, DDL: &source.DDL{Kind: source.DDLAlter, Partitions: true}},
			{Ref: ref("archive", "items_p1"), DDL: &source.DDL{Kind: source.DDLAlter, Partitions: true}}}},
		{"a clause not classified is unparsed", "ALTER TABLE items DISCARD TABLESPACE", alter(source.DDL{Unparsed: true})},
		{"drop tables", "DROP TABLE IF EXISTS items, archive.t2", []tableDDL{
			{Ref: items, DDL: &source.DDL{Kind: source.DDLDrop}},
			{Ref: ref("archive", "t2"), DDL: &source.DDL{Kind: source.DDLDrop}}}},
		{"drop table as the server logs it", "DROP TABLE `items` /* generated by server */", one(source.DDL{Kind: source.DDLDrop})},
		{"drop temporary table", "DROP TEMPORARY TABLE items", nil},
		{"drop view", "DROP VIEW items_view", nil},
		{"drop database", "DROP DATABASE IF EXISTS shop", []tableDDL{{Ref: ref("shop", ""), DDL: &source.DDL{Kind: source.DDLDrop}}}},
		{"rename tables: a name renamed to gets a table", "RENAME TABLE items TO items_old, archive.t2 TO archive.t3", []tableDDL{
			{Ref: items, DDL: &source.DDL{Kind: source.DDLRename, NewName: to(ref("shop", "items_old"))}},
			{Ref: ref("shop", "items_old"), DDL: &source.DDL{Kind: source.DDLReplace}},
			{Ref: ref("archive", "t2"), DDL: &source.DDL{Kind: source.DDLRename, NewName: to(ref("archive", "t3"))}},
			{Ref: ref("archive", "t3"), DDL: &source.DDL{Kind: source.DDLReplace}}}},
		{"rename onto a name: the online schema change cut-over", "RENAME TABLE `items` TO `_items_del`, `_items_gho` TO `items`", []tableDDL{
			{Ref: items, DDL: &source.DDL{Kind: source.DDLReplace}},
			{Ref: ref("shop", "_items_del"), DDL: &source.DDL{Kind: source.DDLReplace}},
			{Ref: ref("shop", "_items_gho"), DDL: &source.DDL{Kind: source.DDLRename, NewName: to(items)}}}},
		{"renames run in order", "RENAME TABLE items TO tmp, tmp TO items_old", []tableDDL{
			{Ref: items, DDL: &source.DDL{Kind: source.DDLRename, NewName: to(ref("shop", "items_old"))}},
			{Ref: ref("shop", "items_old"), DDL: &source.DDL{Kind: source.DDLReplace}}}},
		{"MariaDB RENAME TABLES IF EXISTS, after a line comment", "# moved\nRENAME TABLES IF EXISTS items TO items2",
			[]tableDDL{{Ref: items, DDL: &source.DDL{Kind: source.DDLRename, NewName: to(ref("shop", "items2"))}},
				{Ref: ref("shop", "items2"), DDL: &source.DDL{Kind: source.DDLReplace}}}},
		{"truncate", "TRUNCATE items", one(source.DDL{Kind: source.DDLTruncate})},
		{"truncate table, qualified", "TRUNCATE TABLE `shop`.`items`", one(source.DDL{Kind: source.DDLTruncate})},
		{"optimize", "OPTIMIZE TABLE items, archive.t2", []tableDDL{
			{Ref: items, DDL: &source.DDL{Kind: source.DDLOptimize, Rebuild: true}},
			{Ref: ref("archive", "t2"), DDL: &source.DDL{Kind: source.DDLOptimize, Rebuild: true}}}},
		{"optimize local", "OPTIMIZE LOCAL TABLE items", one(source.DDL{Kind: source.DDLOptimize, Rebuild: true})},
		{"MariaDB create or replace", "CREATE OR REPLACE TABLE items (id int PRIMARY KEY, name varchar(20))", one(source.DDL{Kind: source.DDLReplace})},
		{"MariaDB create or replace like", "CREATE OR REPLACE TABLE items LIKE items_tmpl", one(source.DDL{Kind: source.DDLReplace})},
		{"MariaDB create or replace database", "CREATE OR REPLACE DATABASE shop", []tableDDL{{Ref: ref("shop", ""), DDL: &source.DDL{Kind: source.DDLDrop}}}},
		{"MariaDB create or replace view", "CREATE OR REPLACE VIEW items_view AS SELECT * FROM items", nil},
		{"create table changes no table", "CREATE TABLE items2 (id int)", nil},
		{"alter ignore", "ALTER IGNORE TABLE items ADD c int", alter(source.DDL{Added: []string{"c"}})},
		{"MariaDB alter online", "ALTER ONLINE TABLE items ADD c int", alter(source.DDL{Added: []string{"c"}})},
		{"MariaDB head forms together", "ALTER ONLINE IGNORE TABLE IF EXISTS `shop`.`items` WAIT 10 DROP COLUMN note",
			alter(source.DDL{Dropped: []string{"note"}})},
		{"MariaDB NOWAIT", "ALTER TABLE items NOWAIT ADD c int", alter(source.DDL{Added: []string{"c"}})},
		{"comments and backticks", "/* gh-ost */ ALTER /* why */ TABLE `items` ADD `c` int COMMENT 'a, b'", alter(source.DDL{Added: []string{"c"}})},
		{"line comment first", "-- by hand\nALTER TABLE items ADD c int", alter(source.DDL{Added: []string{"c"}})},
		{"qualified name in another schema", "ALTER TABLE archive.items MODIFY qty year", []tableDDL{{Ref: ref("archive", "items"),
			DDL: &source.DDL{Kind: source.DDLAlter, Modified: []source.ColumnModify{{Name: "qty", NewName: "qty", Type: "year(4)"}}}}}},
		{"quoted name with a backtick", "ALTER TABLE `we``ird` ADD c int", []tableDDL{{Ref: ref("shop", "we`ird"),
			DDL: &source.DDL{Kind: source.DDLAlter, Added: []string{"c"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range tc.want {
				w.DDL.Statement = strings.TrimSpace(tc.stmt)
			}
			got, err := parseDDL("shop", tc.stmt)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// Column types read as information_schema prints them on MariaDB.
func TestParseDDLTypes(t *testing.T) {
	for _, tc := range []struct{ def, typ string }{
		{"int", "int(11)"},
		{"int unsigned", "int(10) unsigned"},
		{"int unsigned zerofill", "int(10) unsigned zerofill"},
		{"int(5) unsigned", "int(5) unsigned"},
		{"tinyint unsigned", "tinyint(3) unsigned"},
		{"smallint", "smallint(6)"},
		{"mediumint unsigned", "mediumint(8) unsigned"},
		{"bigint", "bigint(20)"},
		{"bigint unsigned", "bigint(20) unsigned"},
		{"bool", "tinyint(1)"},
		{"decimal", "decimal(10,0)"},
		{"numeric(5,2)", "decimal(5,2)"},
		{"double precision", "double"},
		{"float(7,2) unsigned", "float(7,2) unsigned"},
		{"char", "char(1)"},
		{"varchar(20) CHARACTER SET latin1", "varchar(20)"},
		{"VARCHAR(20) CHARACTER SET binary", "varbinary(20)"},
		{"enum('it''s','B')", "enum('it''s','B')"},
		{"datetime(6)", "datetime(6)"},
		{"year", "year(4)"},
		{"bit", "bit(1)"},
		{"text", "text"},
	} {
		t.Run(tc.def, func(t *testing.T) {
			got, err := parseDDL("shop", "ALTER TABLE items MODIFY c "+tc.def)
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.Equal(t, tc.typ, got[0].DDL.Modified[0].Type)
		})
	}
	got, err := parseDDL("shop", "ALTER TABLE items MODIFY id serial")
	require.NoError(t, err)
	require.Equal(t, source.ColumnModify{Name: "id", NewName: "id", Type: "bigint(20) unsigned", NotNull: true}, got[0].DDL.Modified[0])
}

// What the parser rejects is an error, which the decoder turns into
// Unparsed changes of the mapped tables the statement names.
func TestParseDDLRejects(t *testing.T) {
	for _, stmt := range []string{
		"ALTER TABLE items ADD COLUMN u uuid",                           // MariaDB's type
		"ALTER TABLE items ADD c int INVISIBLE",                         // MariaDB's and MySQL 8's
		"ALTER TABLE items RENAME COLUMN IF EXISTS a TO b",              // MariaDB's
		"DROP TABLE items WAIT 5",                                       // WAIT after DROP: not rewritten
		"ALTER TABLE items ADD SYSTEM VERSIONING",                       // MariaDB's
		"ALTER TABLE items ADD COLUMN /*!100000 IF NOT EXISTS */ c int", // six-digit versioned comment
		"ALTER TABLE items ADD",
	} {
		t.Run(stmt, func(t *testing.T) {
			_, err := parseDDL("shop", stmt)
			require.Error(t, err)
		})
	}
}

// Statements are kept to maxStatement bytes, cut on a character.
func TestParseDDLCutsStatement(t *testing.T) {
	stmt := "ALTER TABLE items COMMENT '" + strings.Repeat("é", 400) + "'"
	got, err := parseDDL("shop", stmt)
	require.NoError(t, err)
	s := got[0].DDL.Statement
	require.True(t, strings.HasSuffix(s, "…"))
	require.LessOrEqual(t, len(strings.TrimSuffix(s, "…")), maxStatement)
	require.True(t, strings.HasPrefix(stmt, strings.TrimSuffix(s, "…")))
}

// Columns that existed are named as the table spells them; new names as
// the statement spells them; a respelling the table already has is no
// rename. The DDL given is left alone.
func TestCanonicalColumns(t *testing.T) {
	tbl := &source.Table{Columns: []source.Column{{Name: "Name"}, {Name: "qty"}, {Name: "Note"}}}
	in := &source.DDL{
		Kind: source.DDLAlter, Added: []string{"NOTE2"}, Dropped: []string{"note"}, Defaults: []string{"QTY"},
		Modified: []source.ColumnModify{{Name: "QTY", NewName: "QTY", Type: "int(11)"}, {Name: "name", NewName: "Title", Type: "text"}},
		Renamed:  map[string]string{"name": "Title", "qty": "Qty", "note": "Note"},
	}
	got := canonicalColumns(in, tbl)
	require.Equal(t, &source.DDL{
		Kind: source.DDLAlter, Added: []string{"NOTE2"}, Dropped: []string{"Note"}, Defaults: []string{"qty"},
		Modified: []source.ColumnModify{{Name: "qty", NewName: "qty", Type: "int(11)"}, {Name: "Name", NewName: "Title", Type: "text"}},
		Renamed:  map[string]string{"Name": "Title", "qty": "Qty"},
	}, got)
	require.Equal(t, []string{"note"}, in.Dropped)
	require.Len(t, in.Renamed, 3)
}

// Leading comments of every kind still find the verb; other statements
// are not DDL.
func TestDDLVerb(t *testing.T) {
	for q, verb := range map[string]string{
		"ALTER TABLE t ADD c int":                    "ALTER",
		"/* a */ /* b */ drop table t":               "drop",
		"-- note\n# more\nRENAME TABLE a TO b":       "RENAME",
		"OPTIMIZE TABLE t":                           "OPTIMIZE",
		"create or replace table t (id int)":         "create or replace",
		"/* multi\nline */ TRUNCATE t":               "TRUNCATE",
		"INSERT INTO t VALUES (1)":                   "",
		"CREATE TABLE t (id int)":                    "",
		"UPDATE t SET note = 'ALTER TABLE t DROP c'": "",
	} {
		m := ddlVerb.FindStringSubmatch(q)
		if verb == "" {
			require.Nil(t, m, q)
			continue
		}
		require.NotNil(t, m, q)
		require.Equal(t, verb, m[1], q)
	}
}

// Whatever the binlog holds, parsing ends in tables with a schema or an
// error, never a panic.
func FuzzParseDDL(f *testing.F) {
	for _, seed := range []string{
		"ALTER TABLE items ADD COLUMN c int, DROP d, MODIFY e varchar(3) NOT NULL, CHANGE f g int",
		"ALTER ONLINE IGNORE TABLE IF EXISTS `a`.`b` WAIT 1 RENAME COLUMN x TO y",
		"RENAME TABLE a TO b, b TO c, c TO a",
		"CREATE OR REPLACE TABLE t (id int)",
		"OPTIMIZE TABLE a, b",
		"DROP DATABASE d",
		"/* x */ TRUNCATE t",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, stmt string) {
		got, err := parseDDL("shop", stmt)
		if err != nil {
			return
		}
		for _, td := range got {
			if td.Ref.Schema == "" || td.DDL == nil || td.DDL.Kind == "" {
				t.Fatalf("%q: %+v", stmt, td)
			}
		}
	})
}
