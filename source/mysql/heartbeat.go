package mysql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/dynafold/dynafold/source"
)

// SetHeartbeatTable names the table Heartbeat upserts into (table, or
// database.table).
func (c *Changes) SetHeartbeatTable(name string) { c.heartbeat = name }

// Heartbeat upserts the one row of the heartbeat table, creating the
// table on first use: a transaction the binlog carries, so that an idle
// sync's position follows the server. It writes on a session of its own:
// the source's reading sessions are read-only.
func (c *Changes) Heartbeat(ctx context.Context) error {
	if c.heartbeat == "" {
		return nil
	}
	table := source.QuoteRef(dialect{}, source.ParseTableRef(c.heartbeat))
	cfg, err := mysql.ParseDSN(c.src.dsn.Secret())
	if err != nil {
		return fmt.Errorf("parsing MySQL DSN %s: invalid DSN", c.src.dsn)
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return c.src.dsn.RedactError(err)
	}
	defer db.Close()
	if !c.heartbeatMade {
		if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table+" (id int PRIMARY KEY, beat timestamp(6) NOT NULL)"); err != nil {
			return fmt.Errorf("creating the heartbeat table %s: %w", c.heartbeat, c.src.dsn.RedactError(err))
		}
		c.heartbeatMade = true
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO "+table+" (id, beat) VALUES (1, NOW(6)) ON DUPLICATE KEY UPDATE beat = VALUES(beat)"); err != nil {
		return fmt.Errorf("writing the heartbeat to %s: %w", c.heartbeat, c.src.dsn.RedactError(err))
	}
	return nil
}
