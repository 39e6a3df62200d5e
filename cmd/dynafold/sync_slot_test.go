package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
)

// A sync killed while PostgreSQL creates its slot starts again. Creating a
// logical slot waits for every transaction running when it began; the
// killed sync's walsender keeps waiting, holding the half-made slot, and
// the next sync's CREATE_REPLICATION_SLOT failed with "already exists".
// Found by the sync fuzzer (seed 20261126, a kill during the initial
// load while the fuzzer's transactions were open).
func TestSyncKilledWhileCreatingItsSlotStartsAgain(t *testing.T) {
	t.Parallel()
	d := pgOnly()[0]
	sd := newSyncDesign(t, d, "portfolios", "testdata/sync/portfolios.yaml")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, sd.dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	// A transaction with a write, left open: the slot's creation waits
	// for it.
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "INSERT INTO portfolios (id, name) VALUES (100, 'opened before the slot')")
	require.NoError(t, err)

	first, out := sd.start(t)
	slotOf := func() [][]string {
		return testenv.Rows(t, d.Name, sd.dsn, "SELECT slot_name, coalesce(confirmed_flush_lsn::text, 'none') FROM pg_replication_slots WHERE database = current_database()")
	}
	require.Eventually(t, func() bool { return len(slotOf()) == 1 }, time.Minute, 50*time.Millisecond, out.String())
	require.Equal(t, "none", slotOf()[0][1], "the slot is still being created")
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()

	// The next sync ends the half-made slot's walsender, creates the slot
	// again (waiting for the open transaction like the first), loads and
	// streams.
	second, out2 := sd.start(t)
	time.Sleep(time.Second)
	require.NoError(t, tx.Commit(ctx))
	waitFor(t, out2, `"event":"sync_status"`)
	testenv.ExecSQL(t, d.Name, sd.dsn, "UPDATE portfolios SET name = 'renamed after the restart' WHERE id = 1")
	interrupt(t, second, out2)
	sd.catchUp(t)
	sd.requireConverged(t)
}

// --slot is folded as docs/sync.md says, the same way by every command:
// sync --slot MySlot creates the slot and the publication myslot, a second
// sync finds and resumes them, and sync cleanup --slot MySlot drops both.
// The replication protocol folded the unquoted name itself while the
// catalog queries compared it as typed: the second sync tried to create
// the slot again, and cleanup left it behind, keeping WAL. A name that
// cannot be a slot name folded is refused with exit 2 before anything is
// created.
func TestSyncSlotNameIsFolded(t *testing.T) {
	t.Parallel()
	d := pgOnly()[0]
	sd := newSyncDesign(t, d, "portfolios", "testdata/sync/portfolios.yaml")
	t.Cleanup(func() {
		// Whatever the test left: a slot pins WAL on the shared server.
		sd.cli(t, "sync", "cleanup", "--slot", "MySlot")
		_, _ = testenv.QueryRows(context.Background(), d.Name, sd.dsn,
			"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = current_database() AND NOT active")
	})
	slots := func() [][]string {
		return testenv.Rows(t, d.Name, sd.dsn, "SELECT slot_name FROM pg_replication_slots WHERE database = current_database() ORDER BY 1")
	}
	publications := func() [][]string {
		return testenv.Rows(t, d.Name, sd.dsn, "SELECT pubname FROM pg_publication ORDER BY 1")
	}

	r := sd.cli(t, "sync", "--until-caught-up", "--progress", "none", "--slot", "MySlot")
	require.Equal(t, exitOK, r.Code, r.Output())
	require.Contains(t, r.Stdout, "; slot myslot;")
	require.Equal(t, [][]string{{"myslot"}}, slots())
	require.Equal(t, [][]string{{"myslot"}}, publications())

	testenv.ExecSQL(t, d.Name, sd.dsn, "UPDATE portfolios SET name = 'renamed under MySlot' WHERE id = 1")
	r = sd.cli(t, "sync", "--until-caught-up", "--progress", "none", "--slot", "MySlot")
	require.Equal(t, exitOK, r.Code, r.Output())
	require.Equal(t, [][]string{{"myslot"}}, slots(), "the second sync reads the same slot")
	sd.requireConverged(t)

	r = sd.cli(t, "sync", "cleanup", "--slot", "MySlot")
	require.Equal(t, exitOK, r.Code, r.Output())
	require.Contains(t, r.Stdout, "removed replication slot myslot\n")
	require.Contains(t, r.Stdout, "removed publication myslot\n")
	require.Empty(t, slots())
	require.Empty(t, publications())

	long := strings.Repeat("s", 64)
	for _, args := range [][]string{
		{"sync", "--until-caught-up", "--progress", "none"},
		{"sync", "cleanup"},
		{"plan", "--no-target"},
	} {
		r = sd.cli(t, append(args, "--slot", long)...)
		require.Equal(t, exitUsage, r.Code, "%v: %s", args, r.Output())
		require.Contains(t, r.Stderr, `--slot: replication slot name "`+long+`" is 64 characters; PostgreSQL allows at most 63`, args)
	}
	require.Empty(t, slots(), "nothing was created")
	require.Empty(t, publications())
}
