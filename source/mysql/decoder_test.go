package mysql

import (
	"context"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// Event grouping, without a server: transactions end at their XID (or
// COMMIT) with the position just past it, groups that touch no mapped
// table and heartbeats only report idle positions, and a group cut short
// is an error rather than lost changes.
func TestDecoderGroups(t *testing.T) {
	ref := source.TableRef{Name: "items"}
	tbl := &source.Table{Ref: ref, PrimaryKey: []string{"id"}, Columns: []source.Column{
		{Name: "id", DBType: "int(11)", Kind: value.Int}, {Name: "name", DBType: "varchar(20)", Kind: value.String}}}
	need := &source.TableNeed{Table: tbl, Columns: []string{"id", "name"}}
	newDecoder := func() *binlogDecoder {
		return &binlogDecoder{
			c:      &Changes{src: &Source{mariadb: true}},
			tables: map[source.TableRef]*streamTable{{Schema: "db", Name: "items"}: {need: need, table: tbl}},
			db:     "db", file: "binlog.000003", last: binlogPos{file: "binlog.000003", pos: 4},
		}
	}
	ev := func(typ replication.EventType, pos, size uint32, e replication.Event) *replication.BinlogEvent {
		return &replication.BinlogEvent{Header: &replication.EventHeader{Timestamp: 1700000000, EventType: typ, LogPos: pos, EventSize: size}, Event: e}
	}
	gtid := func(pos uint32, seq uint64) *replication.BinlogEvent {
		return ev(replication.MARIADB_GTID_EVENT, pos, 40, &replication.MariadbGTIDEvent{GTID: replicationGTID(seq)})
	}
	rows := func(pos uint32, table string, rs ...[]any) *replication.BinlogEvent {
		return ev(replication.WRITE_ROWS_EVENTv1, pos, 60, &replication.RowsEvent{
			Table: &replication.TableMapEvent{Schema: []byte("db"), Table: []byte(table)}, Rows: rs})
	}
	xid := func(pos uint32) *replication.BinlogEvent {
		return ev(replication.XID_EVENT, pos, 31, &replication.XIDEvent{})
	}
	run := func(d *binlogDecoder, evs ...*replication.BinlogEvent) ([]source.Event, error) {
		var out []source.Event
		for _, e := range evs {
			got, err := d.event(context.Background(), e)
			if err != nil {
				return out, err
			}
			out = append(out, got...)
		}
		return out, nil
	}

	d := newDecoder()
	out, err := run(d, gtid(140, 7), rows(200, "items", []any{int32(1), "one"}, []any{int32(2), nil}), rows(260, "other", []any{int32(9)}), xid(291))
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.Equal(t, source.Position("binlog.000003:291"), out[0].Txn.End)
	require.EqualValues(t, 291-100, out[0].Txn.Size)
	require.Equal(t, []source.Change{
		{Table: ref, Op: source.Insert, New: map[string]value.Value{"id": value.IntValue(1), "name": value.StringValue("one")}},
		{Table: ref, Op: source.Insert, New: map[string]value.Value{"id": value.IntValue(2), "name": value.NullValue()}},
	}, out[0].Txn.Changes)

	// A transaction larger than source.PieceChanges goes out in pieces:
	// the pieces carry no end, the last part carries the end and is whole.
	d = newDecoder()
	many := make([][]any, source.PieceChanges)
	for i := range many {
		many[i] = []any{int32(i), "row"}
	}
	out, err = run(d, gtid(140, 7), rows(200, "items", many...))
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.True(t, out[0].Txn.Partial)
	require.Empty(t, out[0].Txn.End)
	require.Len(t, out[0].Txn.Changes, source.PieceChanges)
	out, err = run(d, rows(260, "items", []any{int32(-1), "last"}), xid(291))
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.False(t, out[0].Txn.Partial)
	require.Equal(t, source.Position("binlog.000003:291"), out[0].Txn.End)
	require.Len(t, out[0].Txn.Changes, 1)
	// A last part with no change of its own still goes out, for its end.
	d = newDecoder()
	out, err = run(d, gtid(140, 7), rows(200, "items", many...), rows(260, "other", []any{int32(9)}), xid(291))
	require.NoError(t, err)
	require.Len(t, out, 2)
	require.Empty(t, out[1].Txn.Changes)
	require.Equal(t, source.Position("binlog.000003:291"), out[1].Txn.End)

	// A group on an unmapped table is an idle position (at most once a
	// second), and so is a heartbeat.
	d = newDecoder()
	out, err = run(d, gtid(340, 8), rows(400, "other", []any{int32(9)}), xid(431),
		ev(replication.HEARTBEAT_EVENT, 431, 0, &replication.GenericEvent{}))
	require.NoError(t, err)
	require.Equal(t, []source.Event{{Idle: "binlog.000003:431"}, {Idle: "binlog.000003:431"}}, out)

	// A standalone DDL group ends at its statement.
	d = newDecoder()
	out, err = run(d, ev(replication.MARIADB_GTID_EVENT, 500, 40, &replication.MariadbGTIDEvent{GTID: replicationGTID(9), Flags: replication.BINLOG_MARIADB_FL_STANDALONE}),
		ev(replication.QUERY_EVENT, 600, 100, &replication.QueryEvent{Schema: []byte("db"), Query: []byte("CREATE TABLE t2 (id int)")}))
	require.NoError(t, err)
	require.Equal(t, []source.Event{{Idle: "binlog.000003:600"}}, out)
	require.False(t, d.open())

	// A new group while one with changes is open.
	d = newDecoder()
	_, err = run(d, gtid(140, 7), rows(200, "items", []any{int32(1), "one"}), gtid(240, 8))
	require.ErrorContains(t, err, "changes would be lost")
}

func replicationGTID(seq uint64) gomysql.MariadbGTID {
	return gomysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: seq}
}
