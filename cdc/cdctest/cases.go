package cdctest

import (
	"fmt"
	"strings"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// image is a row of items; name "" is NULL.
func image(id int64, name string, qty int64) map[string]value.Value {
	n := value.NullValue()
	if name != "" {
		n = value.StringValue(name)
	}
	return map[string]value.Value{"id": value.IntValue(id), "name": n, "qty": value.IntValue(qty)}
}

// only requires that txn holds exactly one change and returns it.
func (f *fixture) only(txn *source.Txn) source.Change {
	f.t.Helper()
	require.NotNil(f.t, txn)
	require.False(f.t, txn.Partial)
	require.Len(f.t, txn.Changes, 1, "one statement, one change: %+v", txn.Changes)
	return txn.Changes[0]
}

// The four row changes, each its own transaction, with whole before-images
// (PostgreSQL: REPLICA IDENTITY FULL): an insert carries the new row, an
// update both rows, a change of primary key is one update from the old key
// to the new, and a delete carries the old row; NULL is a value.
func rowChanges(f *fixture) {
	f.fullImages()
	_, r := f.start()
	f.exec("INSERT INTO items VALUES (1, 'one', 10)",
		"UPDATE items SET qty = 11 WHERE id = 1",
		"UPDATE items SET id = 2, name = NULL WHERE id = 1",
		"DELETE FROM items WHERE id = 2")
	want := []source.Change{
		{Table: items, Op: source.Insert, New: image(1, "one", 10)},
		{Table: items, Op: source.Update, Old: image(1, "one", 10), New: image(1, "one", 11)},
		{Table: items, Op: source.Update, Old: image(1, "one", 11), New: image(2, "", 11)},
		{Table: items, Op: source.Delete, Old: image(2, "", 11)},
	}
	for i, w := range want {
		require.Equal(f.t, w, f.only(r.txn()), "statement %d", i+1)
	}
}

// With the log's default before-images (PostgreSQL's replica identity
// DEFAULT), a before-image may hold only the key columns; every value it
// holds is the row's, and it holds the old key of a deleted row and of a
// row whose key changed.
func keyOnlyImages(f *fixture) {
	_, r := f.start()
	f.exec("INSERT INTO items VALUES (1, 'one', 10)",
		"UPDATE items SET qty = 11 WHERE id = 1",
		"UPDATE items SET id = 2 WHERE id = 1",
		"DELETE FROM items WHERE id = 2")
	cases := []struct {
		op       source.Op
		old, new map[string]value.Value
		oldKey   bool
	}{
		{source.Insert, nil, image(1, "one", 10), false},
		{source.Update, image(1, "one", 10), image(1, "one", 11), false},
		{source.Update, image(1, "one", 11), image(2, "one", 11), true},
		{source.Delete, image(2, "one", 11), nil, true},
	}
	for i, c := range cases {
		ch := f.only(r.txn())
		require.Equal(f.t, items, ch.Table)
		require.Equal(f.t, c.op, ch.Op, "statement %d", i+1)
		require.Equal(f.t, c.new, ch.New, "statement %d: the after-image", i+1)
		for col, v := range ch.Old {
			require.Equal(f.t, c.old[col], v, "statement %d: column %s of the before-image", i+1, col)
		}
		if c.oldKey {
			require.Equal(f.t, c.old["id"], ch.Old["id"], "statement %d: the old key", i+1)
		}
	}
}

// A transaction of several statements arrives as one transaction, its
// changes in the order they were made (rows of one statement in the order
// it wrote them).
func wholeTransaction(f *fixture) {
	f.fullImages()
	_, r := f.start()
	f.txn("INSERT INTO items VALUES (1, 'a', 1), (2, 'b', 2)",
		"UPDATE items SET qty = 3 WHERE id = 1",
		"DELETE FROM items WHERE id = 2",
		"INSERT INTO items VALUES (3, 'c', 3)")
	txn := r.txn()
	require.False(f.t, txn.Partial)
	require.Equal(f.t, []source.Change{
		{Table: items, Op: source.Insert, New: image(1, "a", 1)},
		{Table: items, Op: source.Insert, New: image(2, "b", 2)},
		{Table: items, Op: source.Update, Old: image(1, "a", 1), New: image(1, "a", 3)},
		{Table: items, Op: source.Delete, Old: image(2, "b", 2)},
		{Table: items, Op: source.Insert, New: image(3, "c", 3)},
	}, txn.Changes)
	require.False(f.t, txn.Commit.IsZero(), "the commit time")
}

// Two transactions on two sessions, the first begun first and committed
// last, arrive in commit order.
func commitOrder(f *fixture) {
	_, r := f.start()
	first, err := f.s.DB.BeginTx(f.ctx, nil)
	require.NoError(f.t, err)
	defer first.Rollback()
	_, err = first.ExecContext(f.ctx, "INSERT INTO items VALUES (1, 'first', 1)")
	require.NoError(f.t, err)
	f.txn("INSERT INTO items VALUES (2, 'second', 2)")
	_, err = first.ExecContext(f.ctx, "INSERT INTO items VALUES (3, 'first', 3)")
	require.NoError(f.t, err)
	require.NoError(f.t, first.Commit())

	second, later := r.txn(), r.txn()
	require.Equal(f.t, []source.Change{{Table: items, Op: source.Insert, New: image(2, "second", 2)}}, second.Changes, "the transaction committed first")
	require.Equal(f.t, []source.Change{
		{Table: items, Op: source.Insert, New: image(1, "first", 1)},
		{Table: items, Op: source.Insert, New: image(3, "first", 3)},
	}, later.Changes, "the transaction begun first, committed last")
	require.False(f.t, later.Commit.Before(second.Commit), "commit times follow commit order")
}

// A rolled-back transaction delivers nothing: the next transaction is the
// one committed after it.
func rollback(f *fixture) {
	_, r := f.start()
	tx, err := f.s.DB.BeginTx(f.ctx, nil)
	require.NoError(f.t, err)
	_, err = tx.ExecContext(f.ctx, "INSERT INTO items VALUES (1, 'rolled back', 1)")
	require.NoError(f.t, err)
	require.NoError(f.t, tx.Rollback())
	f.exec("INSERT INTO items VALUES (2, 'committed', 2)")
	require.Equal(f.t, source.Change{Table: items, Op: source.Insert, New: image(2, "committed", 2)}, f.only(r.txn()))
}

// Positions order transactions, Distance measures forward only, Head is
// at or past every committed transaction, and ServerEnd at or past every
// delivered one.
func positions(f *fixture) {
	cs, r := f.start()
	f.exec("INSERT INTO items VALUES (1, 'one', 1)", "INSERT INTO items VALUES (2, 'two', 2)")
	head, err := cs.Head(f.ctx)
	require.NoError(f.t, err)
	t1, t2 := r.txn(), r.txn()
	a, b := t1.End, t2.End
	require.Equal(f.t, -1, cs.Compare(a, b))
	require.Equal(f.t, 1, cs.Compare(b, a))
	require.Equal(f.t, 0, cs.Compare(a, a))
	require.Equal(f.t, -1, cs.Compare(r.from, a), "the stream's start is before its first transaction")
	require.Positive(f.t, cs.Distance(a, b), "bytes of log from one transaction's end to the next")
	require.Zero(f.t, cs.Distance(b, a), "no distance backwards")
	require.Zero(f.t, cs.Distance(a, a))
	require.LessOrEqual(f.t, cs.Compare(b, head), 0, "Head, read after the commit, is at or past it")
	require.GreaterOrEqual(f.t, cs.Compare(r.st.ServerEnd(), b), 0, "ServerEnd %s is at or past the delivered %s", r.st.ServerEnd(), b)
	require.False(f.t, t1.Commit.IsZero())
	require.False(f.t, t2.Commit.Before(t1.Commit))
}

// A stream stopped after confirming some transactions, and started again
// by a new change source (as a sync run again is) from the confirmed
// position, delivers exactly the transactions after it: none lost, none
// twice, though the first stream had delivered one more than it confirmed.
func resume(f *fixture) {
	cs, r := f.start()
	for i := 1; i <= 5; i++ {
		f.exec(fmt.Sprintf("INSERT INTO items VALUES (%d, 'row', %d)", i, i))
	}
	var got []*source.Txn
	for range 3 {
		got = append(got, r.txn())
	}
	saved := got[1].End
	r.st.Confirm(saved)
	require.NoError(f.t, r.st.Close())
	server, err := cs.Identity(f.ctx)
	require.NoError(f.t, err)
	require.NoError(f.t, cs.Close())

	again := f.open()
	same, err := again.Identity(f.ctx)
	require.NoError(f.t, err)
	require.Equal(f.t, server, same, "Identity names the server, whichever change source asks")
	lost, err := again.Lost(f.ctx, saved)
	require.NoError(f.t, err)
	require.Empty(f.t, lost, "the log still holds the confirmed position")
	needs := f.needs()
	start, err := again.Prepare(f.ctx, needs, saved)
	require.NoError(f.t, err)
	require.False(f.t, start.Created, "Prepare finds the reader's slot or position")
	require.LessOrEqual(f.t, again.Compare(start.From, saved), 0, "Prepare starts no later than what was confirmed")
	rest := f.stream(again, saved, needs).drain()
	var ids []int64
	for _, txn := range rest {
		ids = append(ids, f.only(txn).New["id"].I)
	}
	require.Equal(f.t, []int64{3, 4, 5}, ids, "the transactions after the confirmed one, once each")
}

// A stream started again while a large transaction on a table it does not
// read stays open: PostgreSQL keeps the slot's restart position before the
// oldest open transaction, so every start reads that transaction's log
// again before it reaches the confirmed position. Positions reported
// meanwhile are never below the stream's start nor below what it has
// delivered (reader checks both), and each start delivers exactly the
// transaction committed since.
func restartsBehindOpenTxn(f *fixture) {
	f.exec("CREATE TABLE other (id int PRIMARY KEY, body varchar(1000))")
	// After the reader exists: PostgreSQL creates a slot only once the
	// transactions open then have ended.
	cs, r := f.start()
	open, err := f.s.DB.BeginTx(f.ctx, nil)
	require.NoError(f.t, err)
	defer open.Rollback()
	body := strings.Repeat("x", 1000)
	for batch := range 100 {
		var rows []string
		for i := range 100 {
			rows = append(rows, fmt.Sprintf("(%d, '%s')", batch*100+i, body))
		}
		_, err := open.ExecContext(f.ctx, "INSERT INTO other VALUES "+strings.Join(rows, ", "))
		require.NoError(f.t, err)
	}
	needs := f.needs()
	for i := 1; i <= 4; i++ {
		f.exec(fmt.Sprintf("INSERT INTO items VALUES (%d, 'row', %d)", i, i))
		got := r.drain()
		require.Len(f.t, got, 1, "start %d delivers the one transaction committed since", i)
		require.Equal(f.t, int64(i), f.only(got[0]).New["id"].I)
		saved := got[0].End
		r.st.Confirm(saved)
		require.NoError(f.t, r.st.Close())
		require.NoError(f.t, cs.Close())
		cs = f.open()
		_, err := cs.Prepare(f.ctx, needs, saved)
		require.NoError(f.t, err)
		r = f.stream(cs, saved, needs)
	}
}

// With nothing committed the stream reports idle positions; a transaction
// on a table the stream does not read is not delivered but moves the idle
// position past it; an idle position after a transaction is at or past
// its end (reader checks that).
func idle(f *fixture) {
	f.exec("CREATE TABLE other (id int PRIMARY KEY)")
	_, r := f.start()
	ev := r.next()
	require.NotEmpty(f.t, ev.Idle, "nothing is committed: the first event is an idle position, not %+v", ev)
	f.exec("INSERT INTO other VALUES (1)")
	require.Empty(f.t, r.drain(), "a transaction on a table the stream does not read is not delivered")
	f.exec("INSERT INTO items VALUES (1, 'one', 1)")
	require.Equal(f.t, image(1, "one", 1), f.only(r.txn()).New)
	require.Empty(f.t, r.drain())
}

// DDL that adds a column leaves later rows decodable (a source may report
// it as a schema event: MySQL's log holds the statement); a mapped column
// retyped or dropped is a schema event naming the table, delivered before
// any transaction committed after the DDL. Judging it is sync's
// (cdc/schema.go), from the statement where the event carries one and
// the source's Shapes.
func schemaEvents(f *fixture) {
	_, r := f.start()
	f.exec("ALTER TABLE items ADD COLUMN extra int", "INSERT INTO items (id, name, qty, extra) VALUES (1, 'one', 1, 7)")
	ch := f.only(r.txnAfterSchema())
	for col, v := range image(1, "one", 1) {
		require.Equal(f.t, v, ch.New[col], "column %s after a column was added", col)
	}

	f.exec(f.s.Retype(items.Name, "qty", "bigint"), "INSERT INTO items (id, name, qty) VALUES (2, 'two', 2)")
	ev := r.event()
	require.NotNil(f.t, ev.Schema, "a schema event for the retyped column, not %+v", ev)
	require.Equal(f.t, items, ev.Schema.Table)
	require.Equal(f.t, int64(2), f.only(r.txnAfterSchema()).New["id"].I)

	f.exec("ALTER TABLE items DROP COLUMN name", "INSERT INTO items (id, qty) VALUES (3, 3)")
	ev = r.event()
	require.NotNil(f.t, ev.Schema, "a schema event for the dropped column, not %+v", ev)
	require.Equal(f.t, items, ev.Schema.Table)
	if ev.Schema.DDL != nil {
		require.Equal(f.t, []string{"name"}, ev.Schema.DDL.Dropped, "the statement's clauses, where the log carries it")
	}
	require.Equal(f.t, int64(3), f.only(r.txnAfterSchema()).New["id"].I)
}

// TRUNCATE is a transaction of one truncate change, which carries no rows.
func truncate(f *fixture) {
	_, r := f.start()
	f.exec("INSERT INTO items VALUES (1, 'one', 1)", "TRUNCATE TABLE items")
	f.only(r.txn())
	// PostgreSQL may show the table's columns again first (a schema
	// event), as the truncation gave it new storage.
	require.Equal(f.t, source.Change{Table: items, Op: source.Truncate}, f.only(r.txnAfterSchema()))
}

// A transaction of more than source.PieceChanges changes arrives in
// pieces: each but the last Partial, holding at least PieceChanges changes
// and no end; the last not Partial, with the end; together every change,
// in order.
func pieces(f *fixture) {
	f.exec("CREATE TABLE digits (d int PRIMARY KEY)", "INSERT INTO digits VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9)")
	_, r := f.start()
	n := source.PieceChanges
	require.Zero(f.t, n%10000, "the bulk insert writes a multiple of 10,000 rows")
	f.txn(fmt.Sprintf(`INSERT INTO items (id, name, qty)
		SELECT 1 + a.d + 10*b.d + 100*c.d + 1000*e.d + 10000*g.d, 'bulk', 0
		FROM digits a, digits b, digits c, digits e, digits g WHERE g.d < %d`, n/10000),
		fmt.Sprintf("INSERT INTO items VALUES (%d, 'last', 0)", n+1))
	var got []source.Change
	partial := 0
	for {
		txn := r.txn()
		got = append(got, txn.Changes...)
		if !txn.Partial {
			require.NotEmpty(f.t, txn.End)
			break
		}
		partial++
		require.GreaterOrEqual(f.t, len(txn.Changes), source.PieceChanges, "piece %d", partial)
	}
	require.Positive(f.t, partial, "at least one piece before the last")
	require.Len(f.t, got, n+1)
	ids := map[int64]bool{}
	for _, ch := range got {
		require.Equal(f.t, source.Insert, ch.Op)
		ids[ch.New["id"].I] = true
	}
	require.Len(f.t, ids, n+1, "every row once")
	require.Equal(f.t, image(int64(n+1), "last", 0), got[n].New, "the last statement's row comes last")
}

// Check finds nothing missing on a database set up for sync; Prepare
// creates the reader once and then finds it where it left it; Reset makes
// the next Prepare start anew; Cleanup removes what Prepare created, and
// a second Cleanup finds nothing.
func lifecycle(f *fixture) {
	f.fullImages()
	needs := f.needs()
	cs := f.open()
	probs, err := cs.Check(f.ctx, needs)
	require.NoError(f.t, err)
	require.Empty(f.t, probs)
	server, err := cs.Identity(f.ctx)
	require.NoError(f.t, err)
	require.NotEmpty(f.t, server)
	first, err := cs.Prepare(f.ctx, needs, "")
	require.NoError(f.t, err)
	require.True(f.t, first.Created)
	require.NotEmpty(f.t, first.From)
	require.NoError(f.t, cs.Close())

	again := f.open()
	same, err := again.Identity(f.ctx)
	require.NoError(f.t, err)
	require.Equal(f.t, server, same)
	lost, err := again.Lost(f.ctx, first.From)
	require.NoError(f.t, err)
	require.Empty(f.t, lost)
	found, err := again.Prepare(f.ctx, needs, first.From)
	require.NoError(f.t, err)
	require.False(f.t, found.Created, "the second Prepare finds what the first made")
	require.Equal(f.t, 0, again.Compare(found.From, first.From), "nothing was confirmed: it starts where the first did")

	require.NoError(f.t, again.Reset(f.ctx))
	anew, err := again.Prepare(f.ctx, needs, "")
	require.NoError(f.t, err)
	require.True(f.t, anew.Created, "after Reset, Prepare starts anew")
	_, err = again.Cleanup(f.ctx)
	require.NoError(f.t, err)
	removed, err := again.Cleanup(f.ctx)
	require.NoError(f.t, err)
	require.Empty(f.t, removed, "a second Cleanup finds nothing left")
}
