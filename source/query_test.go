package source_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/source/mysql"
	"github.com/dynafold/dynafold/source/postgres"
	"github.com/dynafold/dynafold/value"
)

func arg(v value.Value) any { return v.Text() }

// The statements the readers send, for a nested child query keyed by the
// parent's key and the child's order column.
func TestGeneratedSQL(t *testing.T) {
	lo := value.IntValue(10)
	q := &source.Query{
		Base:       source.TableRef{Name: "race_results"},
		Joins:      []source.Join{{Alias: "_child", Table: source.TableRef{Name: "race_readings"}, Inner: true, On: []source.JoinOn{{Column: "race_id", RefColumn: "race_id"}}}},
		Key:        []string{"race_id", "second"},
		KeyAliases: []string{"", "_child"},
		Columns:    []source.ColumnRef{{Name: "race_id"}, {Alias: "_child", Name: "second"}, {Alias: "_child", Name: "output", Cast: "text"}},
		Where:      []source.WherePart{{SQL: "src.class_id = "}, {Arg: new(string)}},
	}
	after := []value.Value{value.IntValue(3)}
	through := []value.Value{value.IntValue(7), value.IntValue(60)}
	r := source.Range{Lo: &lo}

	pg := source.PageSQL(postgres.Dialect(), q, r, []value.Value{value.IntValue(3), value.IntValue(9)}, 100, arg)
	require.Equal(t, `SELECT "src"."race_id", "_child"."second", "_child"."output"::text FROM "race_results" AS "src" JOIN "race_readings" AS "_child" ON "_child"."race_id" = "src"."race_id"`+
		` WHERE (src.class_id = $1) AND "src"."race_id" >= $2 AND ("src"."race_id", "_child"."second") > ($3, $4) ORDER BY "src"."race_id", "_child"."second" LIMIT 100`, pg.SQL)
	require.Equal(t, []any{"", "10", "3", "9"}, pg.Args)

	my := source.RangeSQL(mysql.Dialect(), q, r, after, through, arg)
	require.Equal(t, "SELECT `src`.`race_id`, `_child`.`second`, CAST(`_child`.`output` AS text) FROM `race_results` AS `src` JOIN `race_readings` AS `_child` ON `_child`.`race_id` = `src`.`race_id`"+
		" WHERE (src.class_id = ?) AND `src`.`race_id` >= ? AND (`src`.`race_id`) > (?)"+
		" AND ((`src`.`race_id` < ?) OR (`src`.`race_id` = ? AND `_child`.`second` <= ?)) ORDER BY `src`.`race_id`, `_child`.`second`", my.SQL)
	require.Equal(t, []any{"", "10", "3", "7", "7", "60"}, my.Args)

	myPage := source.PageSQL(mysql.Dialect(), q, source.Full, []value.Value{value.IntValue(3), value.IntValue(9)}, 5, arg)
	require.Contains(t, myPage.SQL, " AND ((`src`.`race_id` > ?) OR (`src`.`race_id` = ? AND `_child`.`second` > ?)) ORDER BY")
}
