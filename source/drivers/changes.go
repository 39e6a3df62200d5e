package drivers

import (
	"context"
	"fmt"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/source/mysql"
	"github.com/dynafold/dynafold/source/postgres"
)

// ChangeOptions say where a change source reads the log from.
type ChangeOptions struct {
	// Slot names PostgreSQL's replication slot and its publication.
	Slot string
	// ServerID is the replica server_id MySQL's and MariaDB's binlog is
	// read as; 0 derives it from Table (mysql.DefaultServerID).
	ServerID uint32
	// Table is the DynamoDB table synced, for the default server_id.
	Table string
	// HeartbeatTable is the table the change source's heartbeat writes
	// ("": none; see source.Heartbeater).
	HeartbeatTable string
}

// Slotted is a change source that reads through a replication slot the
// server keeps for it (PostgreSQL).
type Slotted interface {
	Slot() string
}

// Replica is a change source that reads the server's log as a replica
// would (MySQL's and MariaDB's binlog): the server keeps nothing for it,
// so its log retention bounds how long sync may stop.
type Replica interface {
	// ServerID is the replica server_id the log is read as.
	ServerID() uint32
	// Retention says, in a sentence for a warning, how long the server
	// keeps its log.
	Retention(ctx context.Context) (string, error)
}

// OpenChangeSource returns the change log of src, a source Open returned,
// as live sync reads it: PostgreSQL's logical replication slot, or MySQL's
// and MariaDB's binlog read as a replica. It connects to nothing until it
// is used; the error is a source without a change log dynafold can read.
func OpenChangeSource(src source.Source, o ChangeOptions) (source.ChangeSource, error) {
	switch s := src.(type) {
	case *postgres.Source:
		c := s.NewChanges(o.Slot, o.Slot)
		if o.HeartbeatTable != "" {
			c.SetHeartbeatTable(o.HeartbeatTable)
		}
		return c, nil
	case *mysql.Source:
		id := o.ServerID
		if id == 0 {
			id = mysql.DefaultServerID(o.Table)
		}
		c := s.NewChanges(id)
		if o.HeartbeatTable != "" {
			c.SetHeartbeatTable(o.HeartbeatTable)
		}
		return c, nil
	}
	return nil, fmt.Errorf("the %s source has no change log dynafold can read", src.Driver())
}

var (
	_ Slotted = (*postgres.Changes)(nil)
	_ Replica = (*mysql.Changes)(nil)
)
