package main

import (
	"context"
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
