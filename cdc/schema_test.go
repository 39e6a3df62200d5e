package cdc

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
)

func shape(storage string, cols ...any) *source.TableShape {
	s := &source.TableShape{Columns: map[string]source.ColumnShape{}, Key: []string{"id"}, Storage: storage}
	for i := 0; i < len(cols); i += 3 {
		s.Columns[cols[i].(string)] = source.ColumnShape{Num: cols[i+1].(int), Type: cols[i+2].(string)}
	}
	return s
}

// TestClassify holds the classification table of docs/sync.md, case by
// case, for both engines' shapes.
func TestClassify(t *testing.T) {
	pg := shape("100", "id", 1, "integer", "discount", 2, "real", "name", 3, "character varying(40)", "note", 4, "text")
	my := shape("", "id", 0, "int(11)", "discount", 0, "float", "name", 0, "varchar(40)", "note", 0, "text")
	with := func(s *source.TableShape, edit func(*source.TableShape)) *source.TableShape {
		c := &source.TableShape{Columns: map[string]source.ColumnShape{}, Key: s.Key, Storage: s.Storage}
		for k, v := range s.Columns {
			c.Columns[k] = v
		}
		edit(c)
		return c
	}
	mapped := []string{"id", "discount", "name"}
	cases := []struct {
		name      string
		was, now  *source.TableShape
		ddl       *source.DDL
		truncated bool
		kind      string
		action    SchemaAction
	}{
		{"pg readded", pg, with(pg, func(s *source.TableShape) { s.Columns["discount"] = source.ColumnShape{Num: 5, Type: "real"} }), nil, false, KindColumnReadded, ActRederive},
		{"pg dropped", pg, with(pg, func(s *source.TableShape) { delete(s.Columns, "discount") }), nil, false, KindColumnDropped, ActStop},
		{"pg renamed", pg, with(pg, func(s *source.TableShape) {
			delete(s.Columns, "discount")
			s.Columns["rebate"] = source.ColumnShape{Num: 2, Type: "real"}
		}), nil, false, KindColumnRenamed, ActStop},
		{"pg varchar widened in place", pg, with(pg, func(s *source.TableShape) {
			s.Columns["name"] = source.ColumnShape{Num: 3, Type: "character varying(60)"}
		}), nil, false, KindTypeWidened, ActContinue},
		{"pg varchar to text in place", pg, with(pg, func(s *source.TableShape) { s.Columns["name"] = source.ColumnShape{Num: 3, Type: "text"} }), nil, false, KindTypeWidened, ActContinue},
		{"pg real to double rewrites", pg, with(pg, func(s *source.TableShape) {
			s.Columns["discount"] = source.ColumnShape{Num: 2, Type: "double precision"}
			s.Storage = "101"
		}), nil, false, KindTypeChanged, ActRederive},
		{"pg widening with a rewrite may be USING", pg, with(pg, func(s *source.TableShape) {
			s.Columns["id"] = source.ColumnShape{Num: 1, Type: "bigint"}
			s.Storage = "101"
		}), nil, false, KindTypeChanged, ActRederive},
		{"pg rewrite keeping types", pg, with(pg, func(s *source.TableShape) { s.Storage = "101" }), nil, false, KindTableRewritten, ActRederive},
		{"pg unmapped column added", pg, with(pg, func(s *source.TableShape) { s.Columns["extra"] = source.ColumnShape{Num: 5, Type: "int"} }), nil, false, KindColumnAdded, ActContinue},
		{"pg unmapped column dropped", pg, with(pg, func(s *source.TableShape) { delete(s.Columns, "note") }), nil, false, KindColumnDropped, ActContinue},
		{"pg not null added", pg, with(pg, func(s *source.TableShape) {
			s.Columns["name"] = source.ColumnShape{Num: 3, Type: "character varying(40)", NotNull: true}
		}), nil, false, KindNotNullAdded, ActContinue},
		{"pg key changed", pg, with(pg, func(s *source.TableShape) { s.Key = []string{"id", "name"} }), nil, false, KindPrimaryKey, ActStop},
		{"table dropped", pg, nil, nil, false, KindTableDropped, ActStop},
		{"pg table created again", with(pg, func(s *source.TableShape) { s.ID = "1" }), with(pg, func(s *source.TableShape) { s.ID = "2" }), nil, false, KindTableReplaced, ActRederive},
		{"table renamed", my, nil, &source.DDL{Kind: source.DDLRename, NewName: &source.TableRef{Name: "clients"}}, false, KindTableRenamed, ActStop},
		{"truncated", pg, pg, nil, true, KindTableTruncated, ActRederive},
		{"my dropped and added in one statement", my, my, &source.DDL{Kind: source.DDLAlter, Dropped: []string{"discount"}, Added: []string{"discount"}}, false, KindColumnReadded, ActRederive},
		{"my dropped", my, with(my, func(s *source.TableShape) { delete(s.Columns, "discount") }), &source.DDL{Kind: source.DDLAlter, Dropped: []string{"discount"}}, false, KindColumnDropped, ActStop},
		{"my dropped, then added again before sync read it", my, my, &source.DDL{Kind: source.DDLAlter, Dropped: []string{"discount"}}, false, KindColumnReadded, ActRederive},
		{"my renamed", my, with(my, func(s *source.TableShape) { delete(s.Columns, "name") }), &source.DDL{Kind: source.DDLAlter, Renamed: map[string]string{"name": "title"}}, false, KindColumnRenamed, ActStop},
		{"my varchar widened", my, with(my, func(s *source.TableShape) { s.Columns["name"] = source.ColumnShape{Type: "varchar(60)"} }),
			&source.DDL{Kind: source.DDLAlter, Modified: []source.ColumnModify{{Name: "name", NewName: "name", Type: "varchar(60)"}}}, false, KindTypeWidened, ActContinue},
		{"my int to bigint", my, with(my, func(s *source.TableShape) { s.Columns["id"] = source.ColumnShape{Type: "bigint(20)"} }),
			&source.DDL{Kind: source.DDLAlter, Modified: []source.ColumnModify{{Name: "id", NewName: "id", Type: "bigint(20)"}}}, false, KindTypeWidened, ActContinue},
		{"my float to double", my, with(my, func(s *source.TableShape) { s.Columns["discount"] = source.ColumnShape{Type: "double"} }),
			&source.DDL{Kind: source.DDLAlter, Modified: []source.ColumnModify{{Name: "discount", NewName: "discount", Type: "double"}}}, false, KindTypeChanged, ActRederive},
		{"my varchar narrowed", my, with(my, func(s *source.TableShape) { s.Columns["name"] = source.ColumnShape{Type: "varchar(10)"} }),
			&source.DDL{Kind: source.DDLAlter, Modified: []source.ColumnModify{{Name: "name", NewName: "name", Type: "varchar(10)"}}}, false, KindTypeChanged, ActRederive},
		{"my not null added", my, with(my, func(s *source.TableShape) { s.Columns["name"] = source.ColumnShape{Type: "varchar(40)", NotNull: true} }),
			&source.DDL{Kind: source.DDLAlter, Modified: []source.ColumnModify{{Name: "name", NewName: "name", Type: "varchar(40)", NotNull: true}}}, false, KindNotNullAdded, ActRederive},
		{"my default", my, my, &source.DDL{Kind: source.DDLAlter, Defaults: []string{"discount"}}, false, KindDefaultChanged, ActContinue},
		{"my optimize", my, my, &source.DDL{Kind: source.DDLOptimize, Rebuild: true}, false, KindTableRebuilt, ActContinue},
		{"my unparsed", my, my, &source.DDL{Kind: source.DDLOther, Unparsed: true, Statement: "ALTER TABLE x WEIRD"}, false, KindUnknownDDL, ActRederive},
		{"my dropped and created again", my, my, &source.DDL{Kind: source.DDLDrop}, false, KindTableReplaced, ActRederive},
		{"my replaced", my, my, &source.DDL{Kind: source.DDLReplace}, false, KindTableReplaced, ActRederive},
		{"my partitions", my, my, &source.DDL{Kind: source.DDLAlter, Partitions: true}, false, KindPartitions, ActRederive},
		{"my convert", my, my, &source.DDL{Kind: source.DDLAlter, Convert: true}, false, KindTableConverted, ActRederive},
		{"my key", my, with(my, func(s *source.TableShape) { s.Key = []string{"name"} }), &source.DDL{Kind: source.DDLAlter, PrimaryKey: true}, false, KindPrimaryKey, ActStop},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := classify(schemaInput{table: "order_details", mapped: mapped, was: c.was, now: c.now, ddl: c.ddl, truncated: c.truncated})
			w, ok := worst(fs)
			require.True(t, ok, "a finding")
			require.Equal(t, c.kind, w.Kind, "%+v", fs)
			require.Equal(t, c.action, w.Action, "%+v", fs)
			if w.Action == ActStop {
				require.NotEmpty(t, w.Fix)
			}
		})
	}
	require.Empty(t, classify(schemaInput{table: "t", mapped: mapped, was: pg, now: pg}), "nothing changed")
}

func TestPartitions(t *testing.T) {
	was := &source.TableShape{Columns: map[string]source.ColumnShape{}, Partitions: map[string]string{"p1": "10", "p2": "11"}}
	now := &source.TableShape{Columns: map[string]source.ColumnShape{}, Partitions: map[string]string{"p1": "10", "p3": "12"}}
	fs := classify(schemaInput{table: "t", was: was, now: now})
	kinds := []string{}
	for _, f := range fs {
		kinds = append(kinds, f.Kind)
		require.Equal(t, ActRederive, f.Action)
		require.True(t, f.Sweep)
	}
	require.ElementsMatch(t, []string{KindPartitionAdded, KindPartitionRemoved}, kinds)
}

func TestWidens(t *testing.T) {
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		{"varchar(40)", "varchar(60)", true}, {"varchar(60)", "varchar(40)", false},
		{"character varying(40)", "text", true}, {"text", "character varying(40)", false},
		{"int(11)", "bigint(20)", true}, {"bigint", "int", false}, {"int unsigned", "bigint", true},
		{"int", "int unsigned", false}, {"smallint", "integer", true},
		{"decimal(10,2)", "decimal(12,2)", true}, {"decimal(10,2)", "decimal(12,3)", false},
		{"numeric(10,2)", "numeric", true}, {"float", "double", false}, {"real", "double precision", false},
		{"tinytext", "mediumtext", true}, {"blob", "text", false}, {"varchar(40)", "mediumtext", true},
	} {
		require.Equal(t, c.want, widens(c.from, c.to), "%s → %s", c.from, c.to)
	}
	require.True(t, sameType("int(11)", "int"), "a display width is no type change")
}
