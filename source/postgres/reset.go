package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/dynafold/dynafold/source"
)

// A slot sync recorded can stop describing the server: someone dropped
// it, the WAL it needed was removed (max_slot_wal_keep_size), or the
// address now reaches a promoted standby or a restored copy, where the
// slot does not exist (before PostgreSQL 17 slots do not follow a
// failover). Streaming from a new slot there would silently miss every
// change in between; these methods let sync tell.

// Identity names the cluster: its system identifier, which a restore into
// a new cluster changes. (A promoted physical standby keeps it; its missing
// slot tells that case.)
func (c *Changes) Identity(ctx context.Context) (string, error) {
	var id string
	if err := c.src.pool.QueryRow(ctx, "SELECT system_identifier::text FROM pg_control_system()").Scan(&id); err != nil {
		return "", fmt.Errorf("reading the system identifier: %w", c.src.dsn.RedactError(err))
	}
	return "system_identifier " + id, nil
}

// Lost reports why the slot can no longer stream the changes after from,
// or "" when it can.
func (c *Changes) Lost(ctx context.Context, _ source.Position) (string, error) {
	var status *string
	err := c.src.pool.QueryRow(ctx, "SELECT wal_status FROM pg_replication_slots WHERE slot_name = $1", c.slot).Scan(&status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Sprintf("the replication slot %s does not exist (dropped, or the server was restored or failed over to a standby, where slots do not follow before PostgreSQL 17)", c.slot), nil
	case err != nil:
		return "", fmt.Errorf("looking up slot %s: %w", c.slot, c.src.dsn.RedactError(err))
	case status != nil && *status == "lost":
		return fmt.Sprintf("the replication slot %s was invalidated: the server removed WAL it still needed (max_slot_wal_keep_size)", c.slot), nil
	}
	return "", nil
}

// Reset drops an invalidated slot, so that Prepare creates a new one.
func (c *Changes) Reset(ctx context.Context) error {
	c.closeHeld()
	return c.admin(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS NULL`, c.slot)
		return err
	})
}
