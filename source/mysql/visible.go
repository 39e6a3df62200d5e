package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// The binlog is sent to replicas as soon as a transaction is written to
// it, which is before the storage engine commits it (MariaDB's and MySQL's
// group commit write the binlog, then commit InnoDB). Live sync reads the
// rows a change touches from the current state, so it must not see a
// transaction before InnoDB has made it visible, or it re-derives the old
// rows and nothing corrects them later.
//
// Until InnoDB commits, the transaction holds its row locks. A probe takes
// (and at once releases) a shared lock on the key of the transaction's
// last change to a table with a primary key: that waits for the
// transaction's commit, after which every one of its changes is visible.
// The wait is bounded by probeLockWait: a lock still held after it belongs
// to a later transaction (the one being probed committed microseconds
// after its binlog write), and waiting on it would stall sync behind an
// application's open transaction.

// probeLockWait is innodb_lock_wait_timeout, in seconds, for probes.
const probeLockWait = 1

// erLockWaitTimeout is ER_LOCK_WAIT_TIMEOUT.
const erLockWaitTimeout = 1205

// prober runs visibility probes on one session of its own.
type prober struct {
	src  *Source
	conn *sql.Conn
}

func (s *Source) newProber(ctx context.Context) (*prober, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, s.dsn.RedactError(err)
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET SESSION innodb_lock_wait_timeout = %d", probeLockWait)); err != nil {
		conn.Close()
		return nil, s.dsn.RedactError(err)
	}
	return &prober{src: s, conn: conn}, nil
}

func (p *prober) Close() error { return p.conn.Close() }

// probe waits until no uncommitted transaction holds the row of tbl whose
// primary key is in img (by column name); false when img lacks a key
// column.
func (p *prober) probe(ctx context.Context, tbl *source.Table, img map[string]value.Value) (bool, error) {
	where := make([]string, len(tbl.PrimaryKey))
	args := make([]any, len(tbl.PrimaryKey))
	for j, k := range tbl.PrimaryKey {
		v, ok := img[k]
		if !ok {
			return false, nil
		}
		where[j] = dialect{}.Quote(k) + " = ?"
		args[j] = arg(v)
	}
	rows, err := p.conn.QueryContext(ctx, "SELECT 1 FROM "+source.QuoteRef(dialect{}, tbl.Ref)+
		" WHERE "+strings.Join(where, " AND ")+" LOCK IN SHARE MODE", args...)
	if err == nil {
		rows.Close()
		err = rows.Err()
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) && myErr.Number == erLockWaitTimeout {
		return true, nil
	}
	return true, p.src.dsn.RedactError(err)
}

// waitVisible returns once t is visible to new reads; false when none of
// its changes could be probed (no primary key, no image).
func (s *Stream) waitVisible(ctx context.Context, t *source.Txn) (bool, error) {
	for i := len(t.Changes) - 1; i >= 0; i-- {
		ch := t.Changes[i]
		tbl := s.keyed[ch.Table]
		img := ch.New
		if img == nil {
			img = ch.Old
		}
		if tbl == nil || img == nil {
			continue
		}
		done, err := s.probes.probe(ctx, tbl, img)
		if err != nil {
			return false, fmt.Errorf("waiting for the commit of the transaction ending at %s: %w", t.End, err)
		}
		if done {
			return true, nil
		}
	}
	return false, nil
}
