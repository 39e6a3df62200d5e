package mysql

import (
	"context"
	"fmt"
	"strings"

	"github.com/dynafold/dynafold/source"
)

// A binlog position sync recorded can stop describing the server: its
// file was purged (binlog retention shorter than a stop), or the address
// now reaches another server (a restore, a failover to another history, a
// blue/green switch that numbers its binlogs anew). Reading from the new
// server's binlog would silently miss every change in between; these
// methods let sync tell.

// Identity names the server: its server_id, and its server_uuid (MySQL)
// or GTID domain (MariaDB).
func (c *Changes) Identity(ctx context.Context) (string, error) {
	vars, err := c.variables(ctx, "server_id", "server_uuid", "gtid_domain_id")
	if err != nil {
		return "", fmt.Errorf("reading the server's identity: %w", err)
	}
	var parts []string
	for _, k := range []string{"server_id", "server_uuid", "gtid_domain_id"} {
		if v := vars[k]; v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	return strings.Join(parts, ", "), nil
}

// Lost reports why the binlog can no longer be read from from, or "" when
// it can.
func (c *Changes) Lost(ctx context.Context, from source.Position) (string, error) {
	if from == "" {
		return "", nil
	}
	p, err := parsePos(from)
	if err != nil {
		return "", err
	}
	kept, err := c.hasFile(ctx, p.file)
	if err != nil {
		return "", err
	}
	if !kept {
		return fmt.Sprintf("the binlog file %s of the confirmed position %s is no longer on the server (purged: binlog_expire_logs_seconds or PURGE BINARY LOGS, or another server behind the address)", p.file, from), nil
	}
	return "", nil
}

// Reset has nothing to drop: the server keeps nothing for sync, and the
// next Prepare, given no position, records the binlog's current end.
func (c *Changes) Reset(context.Context) error { return nil }
