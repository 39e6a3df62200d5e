package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/dynafold/dynafold/source"
)

// SetHeartbeatTable names the table Heartbeat upserts into
// (schema.table or table).
func (c *Changes) SetHeartbeatTable(name string) { c.heartbeat = name }

// Heartbeat upserts the one row of the heartbeat table, creating the table
// on first use: a transaction in this database, which logical decoding
// passes, so that the stream confirms past it even when the mapped tables
// are idle and keepalives alone do not move the slot.
func (c *Changes) Heartbeat(ctx context.Context) error {
	if c.heartbeat == "" {
		return nil
	}
	table := source.QuoteRef(dialect{}, source.ParseTableRef(c.heartbeat))
	err := c.admin(ctx, func(conn *pgx.Conn) error {
		if !c.heartbeatMade {
			if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+table+" (id int PRIMARY KEY, beat timestamptz NOT NULL)"); err != nil {
				return err
			}
			c.heartbeatMade = true
		}
		_, err := conn.Exec(ctx, "INSERT INTO "+table+" (id, beat) VALUES (1, now()) ON CONFLICT (id) DO UPDATE SET beat = excluded.beat")
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the heartbeat to %s: %w", c.heartbeat, err)
	}
	return nil
}

// Retained returns the WAL the slot keeps on the server (the current WAL
// position minus its restart_lsn) and max_slot_wal_keep_size in bytes
// (-1: no limit).
func (c *Changes) Retained(ctx context.Context) (bytes, limit int64, err error) {
	err = c.src.pool.QueryRow(ctx, `SELECT COALESCE((pg_current_wal_lsn() - restart_lsn)::bigint, 0),
		CASE WHEN current_setting('max_slot_wal_keep_size') = '-1' THEN -1 ELSE pg_size_bytes(current_setting('max_slot_wal_keep_size')) END
		FROM pg_replication_slots WHERE slot_name = $1`, c.slot).Scan(&bytes, &limit)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the WAL slot %s retains: %w", c.slot, c.src.dsn.RedactError(err))
	}
	return bytes, limit, nil
}
