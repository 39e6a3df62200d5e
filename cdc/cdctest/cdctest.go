// Package cdctest is the conformance suite every source.ChangeSource passes,
// run by each implementation against its real database: row changes carry
// the images source.Change promises, transactions arrive whole and in commit
// order, a stream resumed from a confirmed position delivers exactly the
// rest, idle positions mean everything before them was delivered, and DDL
// on a mapped column is a schema event.
package cdctest

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
)

// Subject is one change source under test, on an empty database of its
// own that it has set up for live sync.
type Subject struct {
	// DB runs the suite's statements on the database; the suite opens
	// transactions on it, and closes nothing.
	DB *sql.DB
	// Source introspects the database's tables.
	Source source.Source
	// Changes returns a new change source on the database. Every one
	// reads the log as the same reader (PostgreSQL slot, MySQL server_id),
	// as a sync that is run again does. The suite closes each; the
	// harness removes what their Prepare left on the server when the
	// case ends.
	Changes func() source.ChangeSource
	// FullImages is the statement that makes the log carry the whole
	// before-image of table's rows (PostgreSQL: REPLICA IDENTITY FULL),
	// or "" when it always does.
	FullImages func(table string) string
	// Retype is the statement that changes the type of table's column to
	// typ.
	Retype func(table, column, typ string) string
}

// caseTimeout bounds one case: a change source that never delivers fails
// the case instead of hanging the run. It is not a performance bound.
const caseTimeout = time.Minute

// Run runs the suite; open returns a fresh subject for each case. Each
// case creates the table items (id int PRIMARY KEY, name varchar(20),
// qty int), streams it with id, name and qty mapped, and writes to it in
// SQL both engines accept; the statements that differ come from the
// subject.
func Run(t *testing.T, open func(t *testing.T) Subject) {
	for _, c := range []struct {
		name string
		run  func(*fixture)
	}{
		{"RowChangesCarryBeforeAndAfterImages", rowChanges},
		{"KeyOnlyBeforeImagesHoldTheKey", keyOnlyImages},
		{"TransactionArrivesWholeInStatementOrder", wholeTransaction},
		{"TransactionsArriveInCommitOrder", commitOrder},
		{"RolledBackTransactionLeavesNoTrace", rollback},
		{"PositionsAreOrdered", positions},
		{"ResumeFromConfirmedDeliversExactlyTheRest", resume},
		{"RestartsBehindAnOpenTransactionNeverGoBack", restartsBehindOpenTxn},
		{"IdleMeansEverythingBeforeWasDelivered", idle},
		{"SchemaEventsForMappedColumnsOnly", schemaEvents},
		{"TruncateIsAChange", truncate},
		{"LargeTransactionArrivesInPieces", pieces},
		{"PrepareResetCleanup", lifecycle},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(newFixture(t, open(t))) })
	}
}

// items is the table every case streams; columns are its mapped columns.
var (
	items   = source.TableRef{Name: "items"}
	columns = []string{"id", "name", "qty"}
)

// fixture is one case's database with the table items.
type fixture struct {
	t   *testing.T
	s   Subject
	ctx context.Context
}

func newFixture(t *testing.T, s Subject) *fixture {
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	t.Cleanup(cancel)
	f := &fixture{t: t, s: s, ctx: ctx}
	f.exec("CREATE TABLE items (id int PRIMARY KEY, name varchar(20), qty int)")
	return f
}

// fullImages makes items' log carry whole before-images.
func (f *fixture) fullImages() {
	if stmt := f.s.FullImages(items.Name); stmt != "" {
		f.exec(stmt)
	}
}

// needs describes items as it is now, with its mapped columns.
func (f *fixture) needs() []source.TableNeed {
	f.t.Helper()
	tables, err := f.s.Source.Introspect(f.ctx, []source.TableRef{items})
	require.NoError(f.t, err)
	require.NotNil(f.t, tables[items], "table items")
	return []source.TableNeed{{Table: tables[items], Columns: columns}}
}

// exec runs each statement in a transaction of its own.
func (f *fixture) exec(stmts ...string) {
	f.t.Helper()
	for _, s := range stmts {
		_, err := f.s.DB.ExecContext(f.ctx, s)
		require.NoError(f.t, err, s)
	}
}

// txn runs the statements in one transaction and commits it.
func (f *fixture) txn(stmts ...string) {
	f.t.Helper()
	tx, err := f.s.DB.BeginTx(f.ctx, nil)
	require.NoError(f.t, err)
	defer tx.Rollback()
	for _, s := range stmts {
		_, err := tx.ExecContext(f.ctx, s)
		require.NoError(f.t, err, s)
	}
	require.NoError(f.t, tx.Commit())
}

// open returns a new change source, closed when the case ends.
func (f *fixture) open() source.ChangeSource {
	cs := f.s.Changes()
	f.t.Cleanup(func() { cs.Close() })
	return cs
}

// start opens a change source on a new log reader, prepares it and
// streams items from where it starts.
func (f *fixture) start() (source.ChangeSource, *reader) {
	f.t.Helper()
	cs := f.open()
	needs := f.needs()
	st, err := cs.Prepare(f.ctx, needs, "")
	require.NoError(f.t, err)
	require.True(f.t, st.Created, "a new reader's Prepare creates its slot or records its position")
	return cs, f.stream(cs, st.From, needs)
}

// stream starts streaming after from.
func (f *fixture) stream(cs source.ChangeSource, from source.Position, needs []source.TableNeed) *reader {
	f.t.Helper()
	st, err := cs.Stream(f.ctx, from, needs)
	require.NoError(f.t, err)
	f.t.Cleanup(func() { st.Close() })
	return &reader{f: f, cs: cs, st: st, from: from}
}
