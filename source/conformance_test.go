package source_test

// The conformance suite every source driver must pass, run against real
// PostgreSQL and MariaDB: type conversion (golden files), keyset paging,
// shards, read-only sessions, joins, bound filters and hostile identifiers.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/source/drivers"
	"github.com/dynafold/dynafold/value"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func open(t *testing.T, driver, dsn string) source.Source {
	t.Helper()
	d, err := source.ParseDSN(driver, dsn)
	require.NoError(t, err)
	src, err := drivers.Open(context.Background(), d, 8)
	require.NoError(t, err)
	t.Cleanup(func() { src.Close() })
	return src
}

// fullQuery selects every column of a table, keyed by its primary key.
func fullQuery(t *testing.T, src source.Source, name string) (*source.Query, *source.Table) {
	t.Helper()
	ref := source.TableRef{Name: name}
	tables, err := src.Introspect(context.Background(), []source.TableRef{ref})
	require.NoError(t, err)
	tbl := tables[ref]
	require.NotNil(t, tbl, "table %s", name)
	q := &source.Query{Base: ref, Key: tbl.PrimaryKey}
	for _, k := range tbl.PrimaryKey {
		q.KeyKinds = append(q.KeyKinds, tbl.Column(k).Kind)
	}
	for _, k := range tbl.PrimaryKey {
		c := tbl.Column(k)
		q.Columns = append(q.Columns, source.ColumnRef{Name: c.Name, Cast: c.Cast, Kind: c.Kind, Elem: c.Elem})
	}
	for _, c := range tbl.Columns {
		if c.Name == tbl.PrimaryKey[0] && len(tbl.PrimaryKey) == 1 {
			continue
		}
		q.Columns = append(q.Columns, source.ColumnRef{Name: c.Name, Cast: c.Cast, Kind: c.Kind, Elem: c.Elem})
	}
	return q, tbl
}

func readAll(t *testing.T, snap source.Snapshot, q *source.Query, r source.Range, after []value.Value, page int) []value.Row {
	t.Helper()
	var rows []value.Row
	require.NoError(t, snap.Read(context.Background(), q, r, after, page, func(row value.Row) error {
		rows = append(rows, row)
		return nil
	}))
	return rows
}

// Every column type, converted with the default mapping, matches the
// golden file of its database: numbers exact, dates and timestamps in the
// fixed-width UTC forms, NULL omitted, errors for what DynamoDB cannot hold.
func TestTypeConversionGolden(t *testing.T) {
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.LoadSQL(t, d.Name, dsn, filepath.Join("..", "testdata", "types", d.Name+".sql"))
			src := open(t, d.Name, dsn)
			q, tbl := fullQuery(t, src, "type_samples")
			snap, err := src.Snapshot(context.Background(), source.SnapshotOptions{Readers: 1})
			require.NoError(t, err)
			defer snap.Close()
			var sb strings.Builder
			fmt.Fprintln(&sb, "# column: database type -> source kind")
			for _, c := range tbl.Columns {
				fmt.Fprintf(&sb, "# %s: %s -> %s\n", c.Name, c.DBType, c.Kind)
			}
			for _, row := range readAll(t, snap, q, source.Full, nil, 2) {
				fmt.Fprintf(&sb, "\nrow id=%s\n", row[0].Text())
				for i, v := range row[1:] {
					col := q.Columns[i+1].Name
					if v.IsNull() {
						fmt.Fprintf(&sb, "  %-13s omitted (NULL)\n", col)
						continue
					}
					av, err := mapping.Convert(v, mapping.TypeAuto)
					if err != nil {
						fmt.Fprintf(&sb, "  %-13s error: %v\n", col, err)
						continue
					}
					fmt.Fprintf(&sb, "  %-13s %s\n", col, dynamoJSON(av))
				}
			}
			golden(t, "types."+d.Name+".golden", sb.String())
		})
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test ./source -update against the test services")
	require.Equal(t, string(want), got, "%s differs; if intended, run go test ./source -update", path)
}

// dynamoJSON renders an attribute value in DynamoDB's JSON notation with
// sorted map keys, so golden files are stable.
func dynamoJSON(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return fmt.Sprintf(`{"S":%q}`, v.Value)
	case *types.AttributeValueMemberN:
		return fmt.Sprintf(`{"N":%q}`, v.Value)
	case *types.AttributeValueMemberB:
		return fmt.Sprintf(`{"B":"%x"}`, v.Value)
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprintf(`{"BOOL":%v}`, v.Value)
	case *types.AttributeValueMemberNULL:
		return `{"NULL":true}`
	case *types.AttributeValueMemberL:
		parts := make([]string, len(v.Value))
		for i, e := range v.Value {
			parts[i] = dynamoJSON(e)
		}
		return `{"L":[` + strings.Join(parts, ",") + `]}`
	case *types.AttributeValueMemberM:
		keys := make([]string, 0, len(v.Value))
		for k := range v.Value {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%q:%s", k, dynamoJSON(v.Value[k]))
		}
		return `{"M":{` + strings.Join(parts, ",") + `}}`
	}
	return fmt.Sprintf("%T", av)
}

// Keyset paging over a composite key returns every row once, in key
// order, whatever the page size, and resumes after a given key.
func TestKeysetPagingCompositeKey(t *testing.T) {
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			var sb strings.Builder
			sb.WriteString("CREATE TABLE pairs (a int NOT NULL, b varchar(10) NOT NULL, v int, PRIMARY KEY (a, b));\nINSERT INTO pairs VALUES ")
			for a := 1; a <= 7; a++ {
				for _, b := range []string{"x", "y", "z"} {
					if a > 1 || b != "x" {
						sb.WriteString(",")
					}
					fmt.Fprintf(&sb, "(%d, '%s', %d)", a, b, a*10)
				}
			}
			testenv.ExecSQL(t, d.Name, dsn, sb.String()+";")
			src := open(t, d.Name, dsn)
			q, _ := fullQuery(t, src, "pairs")
			snap, err := src.Snapshot(context.Background(), source.SnapshotOptions{Readers: 1})
			require.NoError(t, err)
			defer snap.Close()
			for _, page := range []int{1, 2, 3, 5, 100} {
				rows := readAll(t, snap, q, source.Full, nil, page)
				require.Len(t, rows, 21, "page size %d", page)
				for i := 1; i < len(rows); i++ {
					prev, cur := rows[i-1], rows[i]
					require.True(t, prev[0].I < cur[0].I || (prev[0].I == cur[0].I && prev[1].S < cur[1].S), "order at %d", i)
				}
			}
			rest := readAll(t, snap, q, source.Full, []value.Value{value.IntValue(3), value.StringValue("y")}, 2)
			require.Len(t, rest, 13, "rows after (3, y): (3, z) and 4..7")
			require.Equal(t, int64(3), rest[0][0].I)
			require.Equal(t, "z", rest[0][1].S)
		})
	}
}

// Shards cover the key space: together they return each row exactly once,
// including rows beyond the range seen when the shards were planned.
func TestShardsCoverEveryRow(t *testing.T) {
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			var sb strings.Builder
			sb.WriteString("CREATE TABLE gappy (id bigint PRIMARY KEY, v int);\nINSERT INTO gappy VALUES (-50, 0)")
			for i := 1; i <= 500; i++ {
				fmt.Fprintf(&sb, ",(%d, %d)", i*i, i)
			}
			testenv.ExecSQL(t, d.Name, dsn, sb.String()+";")
			src := open(t, d.Name, dsn)
			q, _ := fullQuery(t, src, "gappy")
			snap, err := src.Snapshot(context.Background(), source.SnapshotOptions{Readers: 4})
			require.NoError(t, err)
			defer snap.Close()
			shards, err := snap.Shards(context.Background(), q, 8)
			require.NoError(t, err)
			require.Len(t, shards, 8)
			require.Nil(t, shards[0].Lo, "open below")
			require.Nil(t, shards[7].Hi, "open above")
			seen := map[int64]int{}
			for _, r := range shards {
				for _, row := range readAll(t, snap, q, r, nil, 37) {
					seen[row[0].I]++
				}
			}
			require.Len(t, seen, 501)
			for id, n := range seen {
				require.Equal(t, 1, n, "id %d read %d times", id, n)
			}
			n, err := snap.Count(context.Background(), q, source.Full, true)
			require.NoError(t, err)
			require.EqualValues(t, 501, n)
		})
	}
}

// Every session is read-only: a statement that writes fails, and so does a
// query entity that tries to write through a data-modifying CTE.
func TestSessionsAreReadOnly(t *testing.T) {
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.ExecSQL(t, d.Name, dsn, "CREATE TABLE victims (id int PRIMARY KEY); INSERT INTO victims VALUES (1), (2);")
			src := open(t, d.Name, dsn)
			type execer interface {
				Exec(context.Context, string) error
			}
			for _, stmt := range []string{"DELETE FROM victims", "INSERT INTO victims VALUES (3)", "CREATE TABLE sneaky (id int)"} {
				err := src.(execer).Exec(context.Background(), stmt)
				require.Error(t, err, stmt)
				require.Regexp(t, `(?i)read.only`, err.Error())
			}
			snap, err := src.Snapshot(context.Background(), source.SnapshotOptions{Readers: 1})
			require.NoError(t, err)
			defer snap.Close()
			if d.Name == "postgres" {
				q := &source.Query{SQL: "WITH gone AS (DELETE FROM victims RETURNING id) SELECT id FROM gone", Key: []string{"id"}, KeyKinds: []value.Kind{value.Int},
					Columns: []source.ColumnRef{{Name: "id", Kind: value.Int}}}
				err = snap.Read(context.Background(), q, source.Full, nil, 10, func(value.Row) error { return nil })
				require.Error(t, err)
				// Refused twice over: as a subquery, and in a read-only transaction.
				require.Regexp(t, `(?i)read.only|data-modifying statement must be at the top level`, err.Error())
			}
			q, _ := fullQuery(t, src, "victims")
			require.Len(t, readAll(t, snap, q, source.Full, nil, 10), 2, "nothing was deleted")
		})
	}
}

// Identifiers from the mapping are quoted by the driver's rules: tables and
// columns named with quotes, backticks, semicolons and spaces are read
// correctly, never spliced into SQL.
func TestHostileIdentifiers(t *testing.T) {
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			table, col := `we"ird; DROP TABLE x; --`, "col`umn 'x'"
			if d.Name == "postgres" {
				testenv.ExecSQL(t, d.Name, dsn, `CREATE TABLE "we""ird; DROP TABLE x; --" (id int PRIMARY KEY, "col`+"`"+`umn 'x'" text);
					INSERT INTO "we""ird; DROP TABLE x; --" VALUES (1, 'a'), (2, 'b');`)
			} else {
				testenv.ExecSQL(t, d.Name, dsn, "CREATE TABLE `we\"ird; DROP TABLE x; --` (id int PRIMARY KEY, `col``umn 'x'` text);"+
					"INSERT INTO `we\"ird; DROP TABLE x; --` VALUES (1, 'a'), (2, 'b');")
			}
			src := open(t, d.Name, dsn)
			q, tbl := fullQuery(t, src, table)
			require.NotNil(t, tbl.Column(col))
			q.Where = []source.WherePart{{SQL: "id >= "}, {Arg: ptr("2")}}
			snap, err := src.Snapshot(context.Background(), source.SnapshotOptions{Readers: 1})
			require.NoError(t, err)
			defer snap.Close()
			rows := readAll(t, snap, q, source.Full, nil, 10)
			require.Len(t, rows, 1)
			require.Equal(t, "b", rows[0][1].S)
		})
	}
}

func ptr(s string) *string { return &s }

// The driver classifies a killed connection as retryable and an SQL error
// as not.
func TestRetryableClassification(t *testing.T) {
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.ExecSQL(t, d.Name, dsn, "CREATE TABLE r (id int PRIMARY KEY);")
			src := open(t, d.Name, dsn)
			snap, err := src.Snapshot(context.Background(), source.SnapshotOptions{Readers: 1})
			require.NoError(t, err)
			defer snap.Close()
			q := &source.Query{Base: source.TableRef{Name: "missing_table"}, Key: []string{"id"}, KeyKinds: []value.Kind{value.Int}, Columns: []source.ColumnRef{{Name: "id", Kind: value.Int}}}
			err = snap.Read(context.Background(), q, source.Full, nil, 10, func(value.Row) error { return nil })
			require.Error(t, err)
			require.False(t, snap.Retryable(err), "a missing table is not a lost connection")
			require.False(t, snap.Retryable(errors.New("anything")))
		})
	}
}

// A PostgreSQL reader forks onto other connections that see exactly its
// snapshot: a change committed after the reader began, even before the
// forks began, is seen by none of them, and forks read at the same time.
// MariaDB cannot share a snapshot between connections: its reader does
// not fork, and sync reads a round over one connection.
func TestForkedReadersShareTheSnapshot(t *testing.T) {
	ctx := context.Background()
	type currentReader interface {
		Current(context.Context, []*source.Txn) (source.Reader, error)
	}
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.ExecSQL(t, d.Name, dsn, "CREATE TABLE accounts (id int PRIMARY KEY, name varchar(20)); INSERT INTO accounts VALUES (1, 'before'), (2, 'before');")
			src := open(t, d.Name, dsn)
			rd, err := src.(currentReader).Current(ctx, nil)
			require.NoError(t, err)
			defer rd.Close()
			forker, ok := rd.(source.Forker)
			if d.Name != "postgres" {
				require.False(t, ok, "%s readers cannot share a snapshot and must not fork", d.Name)
				return
			}
			require.True(t, ok)
			// Committed after the reader began and before it forks: a
			// fork with a snapshot of its own would see it.
			testenv.ExecSQL(t, d.Name, dsn, "UPDATE accounts SET name = 'after' WHERE id = 1; INSERT INTO accounts VALUES (3, 'after');")
			var forks []source.Reader
			for range 2 {
				f, err := forker.Fork(ctx)
				require.NoError(t, err)
				// Closed however the test ends: the pool's Close waits for
				// every connection a fork holds.
				defer f.Close()
				forks = append(forks, f)
			}
			q, _ := fullQuery(t, src, "accounts")
			keys := [][]value.Value{{value.IntValue(1)}, {value.IntValue(2)}, {value.IntValue(3)}}
			read := func(r source.Reader) ([]string, error) {
				var got []string
				err := r.ReadKeys(ctx, q, nil, keys, func(row value.Row, _ [][]value.Row) error {
					got = append(got, fmt.Sprintf("%d=%s", row[0].I, row[1].S))
					return nil
				})
				return got, err
			}
			want := []string{"1=before", "2=before"}
			// The forks read at once, each on its own connection.
			got := make([][]string, len(forks))
			errs := make([]error, len(forks))
			var wg sync.WaitGroup
			for i, f := range forks {
				wg.Go(func() { got[i], errs[i] = read(f) })
			}
			wg.Wait()
			for i := range forks {
				require.NoError(t, errs[i], "fork %d", i)
				require.Equal(t, want, got[i], "fork %d", i)
			}
			fromReader, err := read(rd)
			require.NoError(t, err)
			require.Equal(t, want, fromReader, "the reader it forked from")
			later, err := src.(currentReader).Current(ctx, nil)
			require.NoError(t, err)
			defer later.Close()
			fromLater, err := read(later)
			require.NoError(t, err)
			require.Equal(t, []string{"1=after", "2=before", "3=after"}, fromLater, "a reader begun after the change")
		})
	}
}
