package mysql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/go-sql-driver/mysql"

	"github.com/dynafold/dynafold/source"
)

// The initial load reads after Prepare has recorded the binlog's end, and
// the stream applies only what follows it. A transaction already in the
// binlog at that moment but not yet committed by InnoDB (see visible.go)
// would be missed by both. settle closes that gap on MariaDB: commits are
// made visible in binlog order, so once the last transaction of each GTID
// domain before the recorded position is visible, every earlier one is.
// It reads that transaction from the binlog (starting one sequence number
// before it) and probes the key of its last row change.
//
// Not covered: MySQL (its uuid:n sets are not stepped back here), servers
// without GTIDs, and a last transaction whose table has no primary key or
// cannot be read by the DSN's user; for those the gap remains the few
// microseconds between a binlog write and its commit.

// settleWait bounds how long settle reads the binlog for one transaction.
const settleWait = 10 * time.Second

// settle waits until every transaction before p is visible to new reads.
func (c *Changes) settle(ctx context.Context, p binlogPos) error {
	if !c.src.mariadb || p.gtid == "" {
		return nil
	}
	gs, err := gomysql.ParseMariadbGTIDSet(p.gtid)
	if err != nil {
		return fmt.Errorf("bad GTID position %q: %w", p.gtid, err)
	}
	set := gs.(*gomysql.MariadbGTIDSet)
	for _, servers := range set.Sets {
		for _, last := range servers {
			if last.SequenceNumber <= 1 {
				continue
			}
			before := set.Clone().(*gomysql.MariadbGTIDSet)
			before.Sets[last.DomainID][last.ServerID].SequenceNumber--
			if err := c.settleOne(ctx, before, *last); err != nil {
				return fmt.Errorf("waiting for transaction %d-%d-%d to commit: %w", last.DomainID, last.ServerID, last.SequenceNumber, err)
			}
		}
	}
	return nil
}

// settleOne reads transaction last from the binlog (from the position
// before it) and probes the key of its last row change.
func (c *Changes) settleOne(ctx context.Context, before *gomysql.MariadbGTIDSet, last gomysql.MariadbGTID) error {
	syncer, _, err := c.newSyncer()
	if err != nil {
		return err
	}
	defer syncer.Close()
	streamer, err := syncer.StartSyncGTID(before)
	if binlogPurged(err) {
		return nil // its binlog is purged: it committed long ago
	}
	if err != nil {
		return c.src.dsn.RedactError(err)
	}
	rctx, cancel := context.WithTimeout(ctx, settleWait)
	defer cancel()
	var rows *replication.RowsEvent
	inside := false
	for {
		ev, err := streamer.GetEvent(rctx)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil // not found in time: the binlog moved on, nothing to wait for
		}
		if binlogPurged(err) {
			return nil // its binlog is purged: it committed long ago
		}
		if err != nil {
			return c.src.dsn.RedactError(err)
		}
		switch e := ev.Event.(type) {
		case *replication.MariadbGTIDEvent:
			if inside {
				return c.probeRows(ctx, rows)
			}
			g := e.GTID
			inside = g.DomainID == last.DomainID && g.ServerID == last.ServerID && g.SequenceNumber == last.SequenceNumber
			if !inside && g.DomainID == last.DomainID && g.SequenceNumber > last.SequenceNumber {
				return nil
			}
		case *replication.RowsEvent:
			if inside && len(e.Rows) > 0 {
				rows = e
			}
		case *replication.XIDEvent:
			if inside {
				return c.probeRows(ctx, rows)
			}
		case *replication.QueryEvent:
			q := strings.TrimSpace(string(e.Query))
			if inside && !strings.EqualFold(q, "BEGIN") && (isCommit(q) || rows == nil) {
				return c.probeRows(ctx, rows)
			}
		}
	}
}

// probeRows probes the key of the last row of a rows event.
func (c *Changes) probeRows(ctx context.Context, e *replication.RowsEvent) error {
	if e == nil {
		return nil // DDL or a statement: nothing to wait on
	}
	ref := source.TableRef{Schema: string(e.Table.Schema), Name: string(e.Table.Table)}
	tables, err := c.src.Introspect(ctx, []source.TableRef{ref})
	if err != nil {
		return err
	}
	tbl := tables[ref]
	if tbl == nil || len(tbl.PrimaryKey) == 0 {
		return nil
	}
	img, err := rowImage(tbl, e.Table, e.Rows[len(e.Rows)-1])
	if err != nil {
		return err
	}
	p, err := c.src.newProber(ctx)
	if err != nil {
		return err
	}
	defer p.Close()
	if _, err = p.probe(ctx, tbl, img); tableGone(err) {
		// Dropped since it was introspected, with its database perhaps
		// (the binlog is the whole server's: another application's table):
		// no row of it is left for the load to miss.
		return nil
	}
	return err
}

// tableGone reports whether err says the table, or its database, no
// longer exists (ER_NO_SUCH_TABLE, ER_BAD_DB_ERROR).
func tableGone(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1146 || me.Number == 1049)
}

// binlogPurged reports whether the server refused a binlog dump because
// the binlog it starts in is gone (ER_MASTER_FATAL_ERROR_READING_BINLOG:
// "Could not find GTID state requested by slave in any binlog files").
func binlogPurged(err error) bool {
	var me *gomysql.MyError
	return errors.As(err, &me) && me.Code == gomysql.ER_MASTER_FATAL_ERROR_READING_BINLOG
}
