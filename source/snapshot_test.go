package source_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// What each driver guarantees when the source changes during a read.
//
// Both: one read (one shard) sees one consistent state from its first page
// to its last, whatever is committed meanwhile: rows inserted after it
// began, before or after its position, are not seen; rows deleted or
// updated are seen as they were.
//
// PostgreSQL: every read of a run sees the same state, the one exported
// when the snapshot was opened, even a read that begins after the change.
//
// MySQL/MariaDB: connections cannot share a snapshot, so a read that
// begins after the change sees it; the guarantee is per read.
func TestSnapshotIgnoresConcurrentWrites(t *testing.T) {
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.ExecSQL(t, d.Name, dsn, "CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)")
			for i := 1; i <= 100; i += 10 {
				stmt := "INSERT INTO accounts VALUES "
				for j := i; j < i+10; j++ {
					if j > i {
						stmt += ", "
					}
					stmt += "(" + itoa(j) + ", 100)"
				}
				testenv.ExecSQL(t, d.Name, dsn, stmt)
			}
			// One committed transaction: a row before the reader's position
			// and one after it inserted, one deleted, two updated.
			change := `INSERT INTO accounts VALUES (0, 1), (1000, 1);
DELETE FROM accounts WHERE id = 70;
UPDATE accounts SET balance = 0 WHERE id IN (5, 80);`
			if d.Name == "postgres" {
				change = "BEGIN; " + change + " COMMIT;"
			} else {
				change = "START TRANSACTION; " + change + " COMMIT;"
			}

			src := open(t, d.Name, dsn)
			q, _ := fullQuery(t, src, "accounts")
			snap, err := src.Snapshot(context.Background(), source.SnapshotOptions{Readers: 2})
			require.NoError(t, err)
			defer snap.Close()

			var first []value.Row
			changed := false
			require.NoError(t, snap.Read(context.Background(), q, source.Full, nil, 10, func(row value.Row) error {
				first = append(first, row)
				if len(first) == 30 && !changed {
					testenv.ExecSQL(t, d.Name, dsn, change)
					changed = true
				}
				return nil
			}))
			require.True(t, changed)
			requireOriginal(t, first, "the read that was under way")

			second := readAll(t, snap, q, source.Full, nil, 10)
			if d.Name == "postgres" {
				requireOriginal(t, second, "a later read of the same snapshot")
				require.True(t, snap.Info().Shared)
			} else {
				require.Len(t, second, 101, "a later read has its own snapshot and sees the change")
				require.False(t, snap.Info().Shared)
				require.Contains(t, snap.Info().Note, "own consistent-snapshot transaction")
			}
		})
	}
}

// requireOriginal checks rows are accounts 1..100, each with balance 100.
func requireOriginal(t *testing.T, rows []value.Row, what string) {
	t.Helper()
	require.Len(t, rows, 100, what)
	for i, row := range rows {
		require.Equal(t, itoa(i+1), row[0].Text(), what)
		require.Equal(t, "100", row[1].Text(), "%s: account %d", what, i+1)
	}
}

func itoa(i int) string { return value.IntValue(int64(i)).Text() }
