package mysql

import (
	"context"
	"fmt"
	"strings"

	"github.com/dynafold/dynafold/source"
)

// The binlog is sent to replicas as soon as a transaction is written to
// it, which is before the storage engine commits it (MariaDB's and MySQL's
// group commit write the binlog, then commit InnoDB). Live sync reads the
// rows a change touches from the current state, so it must not see a
// transaction before InnoDB has made it visible, or it re-derives the old
// rows and nothing corrects them later.
//
// Until InnoDB commits, the transaction holds its row locks. waitVisible
// takes (and at once releases) a shared lock on the key of the
// transaction's last change to a table with a primary key: that waits for
// the transaction's commit, after which every one of its changes is
// visible.

// waitVisible returns once t is visible to new reads.
func (s *Stream) waitVisible(ctx context.Context, t *source.Txn) error {
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
		where := make([]string, len(tbl.PrimaryKey))
		args := make([]any, len(tbl.PrimaryKey))
		complete := true
		for j, k := range tbl.PrimaryKey {
			v, ok := img[k]
			if !ok {
				complete = false
				break
			}
			where[j] = dialect{}.Quote(k) + " = ?"
			args[j] = arg(v)
		}
		if !complete {
			continue
		}
		rows, err := s.c.src.db.QueryContext(ctx, "SELECT 1 FROM "+source.QuoteRef(dialect{}, tbl.Ref)+
			" WHERE "+strings.Join(where, " AND ")+" LOCK IN SHARE MODE", args...)
		if err != nil {
			return fmt.Errorf("waiting for the commit of the transaction ending at %s: %w", t.End, s.c.src.dsn.RedactError(err))
		}
		rows.Close()
		return s.c.src.dsn.RedactError(rows.Err())
	}
	return nil
}
