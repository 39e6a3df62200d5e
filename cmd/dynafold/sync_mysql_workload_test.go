package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A seeded random workload for any schema, read from information_schema,
// that keeps every constraint: it copies a column's value from another
// row of the same table (so values stay in their domain, foreign keys
// stay valid, and rows move between parents and in and out of filters),
// deletes rows nothing references, inserts copies of rows under a new
// integer key, and changes the key of rows nothing references.

type mysqlSyncTable struct {
	name       string
	key        []string // primary key
	intKey     bool     // a single integer key column
	cols       []string // neither in the primary key nor in a unique key
	uniques    []string // non-key columns of unique keys
	uniqueText bool     // every unique non-key column is text (can be made unique by suffix)
	referenced bool     // another table's foreign key points at it
}

func mysqlSyncSchema(t *testing.T, db *sql.DB) []*mysqlSyncTable {
	t.Helper()
	ctx := context.Background()
	byName := map[string]*mysqlSyncTable{}
	var tables []*mysqlSyncTable
	rows, err := db.QueryContext(ctx, `SELECT c.TABLE_NAME, c.COLUMN_NAME, c.DATA_TYPE,
			COALESCE((SELECT MAX(s.INDEX_NAME = 'PRIMARY') FROM information_schema.STATISTICS s
				WHERE s.TABLE_SCHEMA = c.TABLE_SCHEMA AND s.TABLE_NAME = c.TABLE_NAME AND s.COLUMN_NAME = c.COLUMN_NAME AND s.NON_UNIQUE = 0), -1)
		FROM information_schema.COLUMNS c JOIN information_schema.TABLES tb
			ON tb.TABLE_SCHEMA = c.TABLE_SCHEMA AND tb.TABLE_NAME = c.TABLE_NAME AND tb.TABLE_TYPE = 'BASE TABLE'
		WHERE c.TABLE_SCHEMA = DATABASE() ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION`)
	require.NoError(t, err)
	defer rows.Close()
	uniqueAll := map[string]bool{}
	for rows.Next() {
		var table, col, dataType string
		var keyKind int // 1 primary, 0 unique, -1 neither
		require.NoError(t, rows.Scan(&table, &col, &dataType, &keyKind))
		tb := byName[table]
		if tb == nil {
			tb = &mysqlSyncTable{name: table}
			byName[table] = tb
			tables = append(tables, tb)
			uniqueAll[table] = true
		}
		switch keyKind {
		case 1:
			tb.key = append(tb.key, col)
			tb.intKey = len(tb.key) == 1 && strings.Contains(dataType, "int")
		case 0:
			tb.uniques = append(tb.uniques, col)
			if !strings.Contains(dataType, "char") && !strings.Contains(dataType, "text") {
				uniqueAll[table] = false
			}
		default:
			tb.cols = append(tb.cols, col)
		}
	}
	require.NoError(t, rows.Err())
	for _, tb := range tables {
		tb.uniqueText = uniqueAll[tb.name]
	}
	refs, err := db.QueryContext(ctx, `SELECT DISTINCT REFERENCED_TABLE_NAME FROM information_schema.KEY_COLUMN_USAGE
		WHERE TABLE_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME IS NOT NULL`)
	require.NoError(t, err)
	defer refs.Close()
	for refs.Next() {
		var name string
		require.NoError(t, refs.Scan(&name))
		if tb := byName[name]; tb != nil {
			tb.referenced = true
		}
	}
	require.NoError(t, refs.Err())
	return tables
}

func mysqlSyncQuote(names ...string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	return strings.Join(q, ", ")
}

// mysqlSyncRandomKey returns the key of a random row of tb, or nil.
func mysqlSyncRandomKey(t *testing.T, ex interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, rng *rand.Rand, tb *mysqlSyncTable) []any {
	t.Helper()
	ctx := context.Background()
	var n int
	require.NoError(t, ex.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+tb.name+"`").Scan(&n))
	if n == 0 {
		return nil
	}
	key := make([]any, len(tb.key))
	dest := make([]any, len(key))
	for i := range key {
		dest[i] = &key[i]
	}
	require.NoError(t, ex.QueryRowContext(ctx, fmt.Sprintf("SELECT %s FROM `%s` ORDER BY %[1]s LIMIT 1 OFFSET %[3]d",
		mysqlSyncQuote(tb.key...), tb.name, rng.IntN(n))).Scan(dest...))
	return key
}

func mysqlSyncWhere(tb *mysqlSyncTable) string {
	parts := make([]string, len(tb.key))
	for i, k := range tb.key {
		parts[i] = "`" + k + "` = ?"
	}
	return strings.Join(parts, " AND ")
}

// mysqlSyncWorkload runs n random operations, in transactions of one to
// five, and returns how many changed a row.
func mysqlSyncWorkload(t *testing.T, dsn string, seed uint64, n int) int {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	tables := mysqlSyncSchema(t, db)
	require.NotEmpty(t, tables)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	changed := 0
	for done := 0; done < n; {
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		for size := 1 + rng.IntN(5); size > 0 && done < n; size-- {
			done++
			tb := tables[rng.IntN(len(tables))]
			key := mysqlSyncRandomKey(t, tx, rng, tb)
			if key == nil {
				continue
			}
			var res sql.Result
			switch op := rng.IntN(10); {
			case op < 6 && len(tb.cols) > 0: // copy a column from another row
				col := tb.cols[rng.IntN(len(tb.cols))]
				other := mysqlSyncRandomKey(t, tx, rng, tb)
				var v any
				require.NoError(t, tx.QueryRowContext(ctx, "SELECT `"+col+"` FROM `"+tb.name+"` WHERE "+mysqlSyncWhere(tb), other...).Scan(&v))
				res, err = tx.ExecContext(ctx, "UPDATE `"+tb.name+"` SET `"+col+"` = ? WHERE "+mysqlSyncWhere(tb), append([]any{v}, key...)...)
			case op < 8 && tb.intKey && tb.uniqueText: // insert a copy under a new key
				var next int64
				require.NoError(t, tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(`"+tb.key[0]+"`), 0) + 1 FROM `"+tb.name+"`").Scan(&next))
				sel := []string{"?"}
				for _, c := range tb.cols {
					sel = append(sel, "`"+c+"`")
				}
				for _, c := range tb.uniques {
					sel = append(sel, fmt.Sprintf("CONCAT(`%s`, '#%d')", c, next))
				}
				cols := append(append(append([]string(nil), tb.key...), tb.cols...), tb.uniques...)
				res, err = tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO `%s` (%s) SELECT %s FROM `%s` WHERE %s",
					tb.name, mysqlSyncQuote(cols...), strings.Join(sel, ", "), tb.name, mysqlSyncWhere(tb)), append([]any{next}, key...)...)
			case op < 9 && !tb.referenced: // delete
				res, err = tx.ExecContext(ctx, "DELETE FROM `"+tb.name+"` WHERE "+mysqlSyncWhere(tb), key...)
			case !tb.referenced && tb.intKey: // change the primary key
				var next int64
				require.NoError(t, tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(`"+tb.key[0]+"`), 0) + 1 FROM `"+tb.name+"`").Scan(&next))
				res, err = tx.ExecContext(ctx, "UPDATE `"+tb.name+"` SET `"+tb.key[0]+"` = ? WHERE "+mysqlSyncWhere(tb), append([]any{next}, key...)...)
			default:
				continue
			}
			require.NoError(t, err, "table %s", tb.name)
			if k, _ := res.RowsAffected(); k > 0 {
				changed++
			}
		}
		require.NoError(t, tx.Commit())
	}
	return changed
}
