package mysql

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// binlogSource opens a fresh database of the test server.
func binlogSource(t *testing.T) (*Source, string) {
	t.Helper()
	raw := testenv.NewMySQLDB(t)
	dsn, err := source.ParseDSN("mysql", raw)
	require.NoError(t, err)
	src, err := Open(context.Background(), dsn, Options{MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(func() { src.Close() })
	return src, raw
}

// nextEvent waits for the stream's next transaction or schema change,
// skipping idle positions.
func nextEvent(t *testing.T, ctx context.Context, st source.Stream) source.Event {
	t.Helper()
	for {
		select {
		case ev, ok := <-st.Events():
			require.True(t, ok, "stream ended: %v", st.Err())
			if ev.Txn != nil || ev.Schema != nil {
				return ev
			}
		case <-ctx.Done():
			t.Fatal("no event from the binlog stream")
		}
	}
}

// nextRows waits for the stream's next transaction, skipping schema
// changes too.
func nextRows(t *testing.T, ctx context.Context, st source.Stream) source.Event {
	t.Helper()
	for {
		if ev := nextEvent(t, ctx, st); ev.Txn != nil {
			return ev
		}
	}
}

// Rows read from the binlog are the rows the text protocol reads, value
// for value, for every type the reader converts; streaming starts both
// from a GTID set and from a file and offset, and columns are matched by
// position or, with binlog_row_metadata = FULL, by name.
func TestBinlogRowsMatchTextProtocol(t *testing.T) {
	for i, mode := range []string{"gtid", "file", "names"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			src, raw := binlogSource(t)
			if mode == "names" {
				testenv.ExecSQL(t, "mysql", raw, "SET GLOBAL binlog_row_metadata = 'FULL'")
				t.Cleanup(func() { testenv.ExecSQL(t, "mysql", raw, "SET GLOBAL binlog_row_metadata = 'NO_LOG'") })
			}
			ch := src.NewChanges(4000000000 + uint32(i))
			start, err := ch.Prepare(ctx, nil, "")
			require.NoError(t, err)
			require.True(t, start.Created)
			from := start.From
			if mode == "file" {
				from = source.Position(strings.SplitN(string(from), gtidSep, 2)[0])
			} else {
				require.Contains(t, string(from), gtidSep, "MariaDB always has a GTID position")
			}

			testenv.LoadSQL(t, "mysql", raw, filepath.Join("..", "..", "testdata", "types", "mysql.sql"))
			ref := source.TableRef{Name: "type_samples"}
			tables, err := src.Introspect(ctx, []source.TableRef{ref})
			require.NoError(t, err)
			tbl := tables[ref]
			need := source.TableNeed{Table: tbl}
			q := &source.Query{Base: ref, Key: tbl.PrimaryKey, KeyKinds: []value.Kind{value.Int}}
			for _, c := range tbl.Columns {
				need.Columns = append(need.Columns, c.Name)
				q.Columns = append(q.Columns, source.ColumnRef{Name: c.Name, Cast: c.Cast, Kind: c.Kind})
			}
			head, err := ch.Head(ctx)
			require.NoError(t, err)

			st, err := ch.Stream(ctx, from, []source.TableNeed{need})
			require.NoError(t, err)
			defer st.Close()
			// The script's DROP TABLE IF EXISTS is a schema change first.
			ev := nextRows(t, ctx, st)
			require.NotNil(t, ev.Txn, "the INSERT of four rows")
			if mode == "names" {
				// Column names in the binlog: a table whose columns are read
				// in another order still decodes by name.
				shuffled := *tbl
				shuffled.Columns = append([]source.Column{tbl.Columns[len(tbl.Columns)-1]}, tbl.Columns[:len(tbl.Columns)-1]...)
				need.Table = &shuffled
				st.Close()
				st, err = ch.Stream(ctx, from, []source.TableNeed{need})
				require.NoError(t, err)
				defer st.Close()
				ev = nextRows(t, ctx, st)
				require.NotNil(t, ev.Txn)
			}
			require.Len(t, ev.Txn.Changes, 4)
			// Other tests share the server's binlog: later transactions may
			// come before head, but the insert ends at or before it.
			require.LessOrEqual(t, ch.Compare(ev.Txn.End, head), 0, "the insert was committed before %s: ends at %s", head, ev.Txn.End)
			require.Equal(t, mode != "file", strings.Contains(string(ev.Txn.End), gtidSep), ev.Txn.End)

			rd, err := src.Current(ctx, nil)
			require.NoError(t, err)
			defer rd.Close()
			var keys [][]value.Value
			for _, c := range ev.Txn.Changes {
				require.Equal(t, source.Insert, c.Op)
				keys = append(keys, []value.Value{c.New["id"]})
			}
			n := 0
			require.NoError(t, rd.ReadKeys(ctx, q, nil, keys, func(row value.Row, _ [][]value.Row) error {
				img := ev.Txn.Changes[n].New
				for j, c := range q.Columns {
					require.Equal(t, row[j], img[c.Name], "row %s column %s (%s)", row[0].Text(), c.Name, tbl.Columns[j].DBType)
				}
				n++
				return nil
			}))
			require.Equal(t, 4, n)
		})
	}
}

// schemaChange waits for the stream's next event, which must be a schema
// change of ref, and returns what the statement did.
func schemaChange(t *testing.T, ctx context.Context, st source.Stream, ref source.TableRef) *source.DDL {
	t.Helper()
	ev := nextEvent(t, ctx, st)
	require.NotNil(t, ev.Schema, "a schema change, not %+v", ev.Txn)
	require.Equal(t, ref, ev.Schema.Table)
	require.NotNil(t, ev.Schema.DDL)
	return ev.Schema.DDL
}

// Updates carry full before- and after-images, deletes the before-image;
// DDL on a mapped table is a schema change carrying the parsed statement
// (MariaDB's forms included, and Unparsed where the parser gives up),
// DDL on other tables is nothing, TRUNCATE is a truncate change, and
// rows after DDL decode by the table's new columns. Idle positions reach
// the binlog's end.
func TestBinlogChangesAndDDL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src, raw := binlogSource(t)
	testenv.ExecSQL(t, "mysql", raw, `CREATE TABLE items (id int PRIMARY KEY, name varchar(20), qty int, note text) ENGINE=InnoDB;
		CREATE TABLE other (id int PRIMARY KEY) ENGINE=InnoDB;
		INSERT INTO items VALUES (1, 'one', 1, 'n'), (2, 'two', 2, NULL);`)
	ref := source.TableRef{Name: "items"}
	tables, err := src.Introspect(ctx, []source.TableRef{ref})
	require.NoError(t, err)
	need := source.TableNeed{Table: tables[ref], Columns: []string{"id", "name", "qty"}}
	ch := src.NewChanges(4000000002)
	start, err := ch.Prepare(ctx, nil, "")
	require.NoError(t, err)
	st, err := ch.Stream(ctx, start.From, []source.TableNeed{need})
	require.NoError(t, err)
	defer st.Close()

	testenv.ExecSQL(t, "mysql", raw, `INSERT INTO other VALUES (1);
		START TRANSACTION; UPDATE items SET id = 3, qty = 30 WHERE id = 1; DELETE FROM items WHERE id = 2; COMMIT;`)
	ev := nextEvent(t, ctx, st)
	require.NotNil(t, ev.Txn)
	require.Equal(t, []source.Change{
		{Table: ref, Op: source.Update,
			Old: map[string]value.Value{"id": value.IntValue(1), "name": value.StringValue("one"), "qty": value.IntValue(1), "note": value.StringValue("n")},
			New: map[string]value.Value{"id": value.IntValue(3), "name": value.StringValue("one"), "qty": value.IntValue(30), "note": value.StringValue("n")}},
		{Table: ref, Op: source.Delete,
			Old: map[string]value.Value{"id": value.IntValue(2), "name": value.StringValue("two"), "qty": value.IntValue(2), "note": value.NullValue()}},
	}, ev.Txn.Changes, "one transaction; the insert into an unmapped table is not a change")
	head, err := ch.Head(ctx)
	require.NoError(t, err)
	require.LessOrEqual(t, ch.Compare(ev.Txn.End, head), 0, "head is at or past the transaction (other tests share the binlog)")

	// A column added in the middle: a schema change for sync to judge,
	// and later rows decode by the new column order.
	testenv.ExecSQL(t, "mysql", raw, `ALTER TABLE other ADD COLUMN x int;
		ALTER TABLE items ADD COLUMN extra int AFTER id;
		INSERT INTO items (id, extra, name, qty) VALUES (4, 44, 'four', 4);`)
	require.Equal(t, &source.DDL{Statement: "ALTER TABLE items ADD COLUMN extra int AFTER id", Kind: source.DDLAlter, Added: []string{"extra"}},
		schemaChange(t, ctx, st, ref), "none for the unmapped table before it")
	ev = nextEvent(t, ctx, st)
	require.NotNil(t, ev.Txn)
	require.Equal(t, value.StringValue("four"), ev.Txn.Changes[0].New["name"])
	require.Equal(t, value.IntValue(4), ev.Txn.Changes[0].New["qty"])

	// Idle positions reach the binlog's end.
	testenv.ExecSQL(t, "mysql", raw, `INSERT INTO other (id) VALUES (2);`)
	head, err = ch.Head(ctx)
	require.NoError(t, err)
	for idle := source.Position(""); idle == "" || ch.Compare(idle, head) < 0; {
		select {
		case e := <-st.Events():
			require.Nil(t, e.Txn)
			idle = e.Idle
		case <-ctx.Done():
			t.Fatalf("no idle position at %s", head)
		}
	}

	// TRUNCATE is a change of its transaction, not a schema change.
	testenv.ExecSQL(t, "mysql", raw, `TRUNCATE TABLE items`)
	ev = nextEvent(t, ctx, st)
	require.NotNil(t, ev.Txn)
	require.Equal(t, []source.Change{{Table: ref, Op: source.Truncate}}, ev.Txn.Changes)

	testenv.ExecSQL(t, "mysql", raw, `ALTER TABLE items MODIFY qty bigint NOT NULL`)
	require.Equal(t, []source.ColumnModify{{Name: "qty", NewName: "qty", Type: "bigint(20)", NotNull: true}}, schemaChange(t, ctx, st, ref).Modified)
	shapes, err := ch.Shapes(ctx, []source.TableRef{ref})
	require.NoError(t, err)
	require.Equal(t, source.ColumnShape{Type: "bigint(20)", NotNull: true}, shapes[ref].Columns["qty"], "the parsed type is the one the server prints")

	testenv.ExecSQL(t, "mysql", raw, "ALTER TABLE `items` RENAME COLUMN NAME TO title")
	require.Equal(t, map[string]string{"name": "title"}, schemaChange(t, ctx, st, ref).Renamed, "the old name as the table spells it")

	// MariaDB's forms, which the parser is given rewritten.
	testenv.ExecSQL(t, "mysql", raw, "/* by hand */ ALTER ONLINE TABLE items DROP COLUMN IF EXISTS note")
	require.Equal(t, []string{"note"}, schemaChange(t, ctx, st, ref).Dropped)
	testenv.ExecSQL(t, "mysql", raw, "ALTER TABLE items FORCE")
	require.True(t, schemaChange(t, ctx, st, ref).Rebuild)
	testenv.ExecSQL(t, "mysql", raw, "OPTIMIZE TABLE items")
	d := schemaChange(t, ctx, st, ref)
	require.Equal(t, source.DDLOptimize, d.Kind)

	// What the parser rejects is Unparsed, for sync to re-derive.
	testenv.ExecSQL(t, "mysql", raw, "ALTER TABLE items ADD COLUMN u uuid")
	require.Equal(t, &source.DDL{Statement: "ALTER TABLE items ADD COLUMN u uuid", Kind: source.DDLOther, Unparsed: true}, schemaChange(t, ctx, st, ref))

	// The cut-over of an online schema change: the name now holds another
	// table, whose rows decode by its columns.
	testenv.ExecSQL(t, "mysql", raw, `CREATE TABLE items_new (id int PRIMARY KEY, title varchar(20), label text) ENGINE=InnoDB;
		RENAME TABLE items TO items_old, items_new TO items;
		INSERT INTO items VALUES (5, 'five', 'l');`)
	require.Equal(t, source.DDLReplace, schemaChange(t, ctx, st, ref).Kind)
	ev = nextEvent(t, ctx, st)
	require.NotNil(t, ev.Txn)
	require.Equal(t, map[string]value.Value{"id": value.IntValue(5), "title": value.StringValue("five"), "label": value.StringValue("l")}, ev.Txn.Changes[0].New)

	// A rename away, then a drop.
	testenv.ExecSQL(t, "mysql", raw, "RENAME TABLE items TO items_gone")
	d = schemaChange(t, ctx, st, ref)
	require.Equal(t, source.DDLRename, d.Kind)
	require.Equal(t, &source.TableRef{Name: "items_gone"}, d.NewName, "named as the mapping names the table")
	testenv.ExecSQL(t, "mysql", raw, "RENAME TABLE items_gone TO items; DROP TABLE IF EXISTS items_old, items")
	require.Equal(t, source.DDLReplace, schemaChange(t, ctx, st, ref).Kind, "the name holds a table again")
	require.Equal(t, source.DDLDrop, schemaChange(t, ctx, st, ref).Kind)
	shapes, err = ch.Shapes(ctx, []source.TableRef{ref})
	require.NoError(t, err)
	require.Empty(t, shapes, "a table that does not exist has no shape")
}

// Check names each missing prerequisite with its fix.
func TestBinlogCheck(t *testing.T) {
	ctx := context.Background()
	src, _ := binlogSource(t)
	probs, err := src.NewChanges(DefaultServerID("t")).Check(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, probs, "the test server is set up for live sync")

	probs, err = src.NewChanges(1).Check(ctx, nil)
	require.NoError(t, err)
	require.Len(t, probs, 1)
	require.Contains(t, probs[0].What, "server_id is 1")
	require.Contains(t, probs[0].Fix, "--server-id")

	note, err := src.NewChanges(1).Retention(ctx)
	require.NoError(t, err)
	require.Contains(t, note, "binlog_expire_logs_seconds")
}

// Prepare waits for the binlog's last transaction to commit, but an
// application's open transaction holding the same row (later, not yet in
// the binlog) does not stall it: the probe gives up its lock wait.
func TestPrepareNotStalledByAnOpenTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src, raw := binlogSource(t)
	testenv.ExecSQL(t, "mysql", raw, `CREATE TABLE held (id int PRIMARY KEY, v int) ENGINE=InnoDB;
		INSERT INTO held VALUES (1, 1); UPDATE held SET v = 2 WHERE id = 1;`)
	db, err := sql.Open("mysql", raw)
	require.NoError(t, err)
	defer db.Close()
	app, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer app.Rollback()
	_, err = app.ExecContext(ctx, "UPDATE held SET v = 3 WHERE id = 1")
	require.NoError(t, err)

	start, err := src.NewChanges(4000000003).Prepare(ctx, nil, "")
	require.NoError(t, err)
	require.True(t, start.Created)
}
