package postgres_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the suite's statements
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/cdc/cdctest"
	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/source/postgres"
)

// The logical replication change source passes the change-source suite,
// each case on a database, slot and publication of its own.
func TestChangeSourceConformance(t *testing.T) {
	cdctest.Run(t, func(t *testing.T) cdctest.Subject {
		raw := testenv.NewPostgresDB(t)
		dsn, err := source.ParseDSN("postgres", raw)
		require.NoError(t, err)
		src, err := postgres.Open(context.Background(), dsn, postgres.Options{MaxConns: 4})
		require.NoError(t, err)
		t.Cleanup(func() { src.Close() })
		db, err := sql.Open("pgx", raw)
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		slot := "dft_conformance_" + hex.EncodeToString(b)
		// A slot left behind keeps WAL on the shared server and keeps the
		// database from being dropped: it goes before the database does.
		t.Cleanup(func() { dropSlot(t, src, slot) })
		return cdctest.Subject{
			DB:     db,
			Source: src,
			Changes: func() source.ChangeSource {
				return src.NewChanges(slot, slot)
			},
			FullImages: func(table string) string {
				return "ALTER TABLE " + postgres.Dialect().Quote(table) + " REPLICA IDENTITY FULL"
			},
			Retype: func(table, column, typ string) string {
				q := postgres.Dialect().Quote
				return "ALTER TABLE " + q(table) + " ALTER COLUMN " + q(column) + " TYPE " + typ
			},
		}
	})
}

// dropSlot removes the slot and publication, waiting for a walsender that
// a stream just closed to let go of the slot.
func dropSlot(t *testing.T, src *postgres.Source, slot string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		_, err := src.NewChanges(slot, slot).Cleanup(ctx)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("dropping replication slot %s: %v", slot, err)
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Head leaves the WAL up to the position it returns flushed, so that a
// walsender can send it at once: a record that is not a commit (here a
// non-transactional logical message) is otherwise left unflushed until
// the next commit or running-transactions record.
func TestHeadFlushesTheWALUpToIt(t *testing.T) {
	ctx := context.Background()
	raw := testenv.NewPostgresDB(t)
	dsn, err := source.ParseDSN("postgres", raw)
	require.NoError(t, err)
	src, err := postgres.Open(ctx, dsn, postgres.Options{MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() { src.Close() })
	db, err := sql.Open("pgx", raw)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.ExecContext(ctx, "SELECT pg_logical_emit_message(false, 'dynafold-test', 'unflushed')")
	require.NoError(t, err)
	c := src.NewChanges("dft_head_unused", "dft_head_unused")
	head, err := c.Head(ctx)
	require.NoError(t, err)
	var flushed string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT pg_current_wal_flush_lsn()::text").Scan(&flushed))
	require.GreaterOrEqual(t, c.Compare(source.Position(flushed), head), 0, "flushed %s, head %s", flushed, head)
}
