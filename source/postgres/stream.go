package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// statusEvery is how often the stream reports its confirmed position to
// the server, and asks for a keepalive when idle (so that an idle source
// is known to be idle within about this long).
const statusEvery = time.Second

// Stream is a running logical replication stream of committed
// transactions, decoded from pgoutput.
type Stream struct {
	c      *Changes
	conn   *pgconn.PgConn
	events chan source.Event
	done   chan struct{}
	err    atomic.Pointer[error]
	cancel context.CancelFunc

	// confirmed is the LSN sync has applied through; serverEnd the last
	// WAL end the server reported.
	confirmed, serverEnd atomic.Uint64
}

// Stream starts replication after from. needs names the tables and the
// columns whose schema changes stop sync.
func (c *Changes) Stream(ctx context.Context, from source.Position, needs []source.TableNeed) (source.Stream, error) {
	start, err := pglogrepl.ParseLSN(string(from))
	if err != nil {
		return nil, fmt.Errorf("bad stream position %q: %w", from, err)
	}
	types, err := c.columnTypes(ctx, needs)
	if err != nil {
		return nil, err
	}
	conn := c.held
	c.held = nil
	if conn == nil {
		if conn, err = c.replication(ctx); err != nil {
			return nil, err
		}
	}
	pub := strings.ReplaceAll(c.publication, `'`, `''`)
	opts := pglogrepl.StartReplicationOptions{PluginArgs: []string{"proto_version '1'", "publication_names '" + pub + "'"}}
	err = pglogrepl.StartReplication(ctx, conn, c.slot, start, opts)
	// A sync that has just exited may still hold the slot for a moment
	// (object_in_use): wait for the server to release it.
	for wait := 0; slotInUse(err) && wait < 40 && ctx.Err() == nil; wait++ {
		conn.Close(context.Background())
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if conn, err = c.replication(ctx); err != nil {
			return nil, err
		}
		err = pglogrepl.StartReplication(ctx, conn, c.slot, start, opts)
	}
	if err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("starting replication from slot %s: %w", c.slot, c.src.dsn.RedactError(err))
	}
	sctx, cancel := context.WithCancel(context.Background())
	s := &Stream{c: c, conn: conn, events: make(chan source.Event, 8192), done: make(chan struct{}), cancel: cancel}
	s.confirmed.Store(uint64(start))
	d := &decoder{needs: map[source.TableRef]*source.TableNeed{}, types: types, rels: map[uint32]*relation{}, m: pgtype.NewMap()}
	for i := range needs {
		d.needs[canonical(needs[i].Table.Ref)] = &needs[i]
	}
	go s.run(sctx, d, start)
	return s, nil
}

func slotInUse(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55006"
}

// columnTypes reads each mapped table's columns and their types when
// streaming starts: a relation's first message in the session that shows
// others is DDL run since (see decoder.message).
func (c *Changes) columnTypes(ctx context.Context, needs []source.TableNeed) (map[source.TableRef]map[string]uint32, error) {
	out := map[source.TableRef]map[string]uint32{}
	for _, n := range needs {
		rows, err := c.src.pool.Query(ctx, `SELECT a.attname, a.atttypid FROM pg_attribute a
			JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE c.relname = $1 AND ns.nspname = COALESCE(NULLIF($2, ''), current_schema()) AND a.attnum > 0 AND NOT a.attisdropped`,
			n.Table.Ref.Name, n.Table.Ref.Schema)
		if err != nil {
			return nil, fmt.Errorf("reading column types of %s: %w", n.Table.Ref, c.src.dsn.RedactError(err))
		}
		m := map[string]uint32{}
		for rows.Next() {
			var name string
			var oid uint32
			if err := rows.Scan(&name, &oid); err != nil {
				rows.Close()
				return nil, err
			}
			m[name] = oid
		}
		if err := rows.Err(); err != nil {
			return nil, c.src.dsn.RedactError(err)
		}
		out[canonical(n.Table.Ref)] = m
	}
	return out, nil
}

// canonical drops the schema "public" so that a table named with or
// without it is one table.
func canonical(r source.TableRef) source.TableRef {
	if r.Schema == "public" {
		r.Schema = ""
	}
	return r
}

// Next returns the next event, blocking until one arrives.
func (s *Stream) Next(ctx context.Context) (source.Event, error) {
	select {
	case ev, ok := <-s.events:
		if !ok {
			if p := s.err.Load(); p != nil {
				return source.Event{}, *p
			}
			return source.Event{}, errors.New("replication stream ended")
		}
		return ev, nil
	case <-ctx.Done():
		return source.Event{}, ctx.Err()
	}
}

// Events is the channel Next reads, for callers that select on it.
func (s *Stream) Events() <-chan source.Event { return s.events }

// Err is the error that ended the stream, once Events is closed.
func (s *Stream) Err() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return errors.New("replication stream ended")
}

// Confirm records that every change through pos is applied; the stream
// reports it to the server, which may then recycle the WAL before it.
func (s *Stream) Confirm(pos source.Position) {
	lsn, err := pglogrepl.ParseLSN(string(pos))
	if err != nil {
		return
	}
	for {
		old := s.confirmed.Load()
		if uint64(lsn) <= old || s.confirmed.CompareAndSwap(old, uint64(lsn)) {
			return
		}
	}
}

// ServerEnd is the latest end of WAL the server reported.
func (s *Stream) ServerEnd() source.Position {
	return source.Position(pglogrepl.LSN(s.serverEnd.Load()).String())
}

// Close stops the stream after telling the server the confirmed position.
func (s *Stream) Close() error {
	s.cancel()
	<-s.done
	return nil
}

func (s *Stream) fail(err error) {
	s.err.CompareAndSwap(nil, &err)
}

// run receives replication messages until the context ends, assembling
// transactions and reporting the confirmed position.
//
// floor is the latest position the stream has reported, starting at the
// position it streams after. A keepalive below it is not reported as idle:
// a walsender starts its sent position at the slot's confirmed position
// and then moves it back to the slot's restart position, re-reading the
// WAL between them, so its first keepalives can report positions that go
// backwards, below transactions it has already delivered.
func (s *Stream) run(ctx context.Context, d *decoder, floor pglogrepl.LSN) {
	defer close(s.done)
	defer close(s.events)
	defer s.conn.Close(context.Background())
	defer func() {
		// A last report, so that a clean stop leaves the slot at the
		// confirmed position.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.status(sctx, false)
	}()
	nextStatus := time.Now()
	idleAsked := false
	var txn *source.Txn
	for {
		if time.Now().After(nextStatus) {
			// Asking for a reply when no transaction is open makes the
			// server answer with a keepalive at its current position.
			idleAsked = txn == nil
			if err := s.status(ctx, idleAsked); err != nil {
				s.fail(fmt.Errorf("reporting the replication position: %w", err))
				return
			}
			nextStatus = time.Now().Add(statusEvery)
		}
		rctx, cancel := context.WithDeadline(ctx, nextStatus)
		raw, err := s.conn.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if pgconn.Timeout(err) {
				continue
			}
			s.fail(fmt.Errorf("receiving from replication slot %s: %w", s.c.slot, s.c.src.dsn.RedactError(err)))
			return
		}
		switch msg := raw.(type) {
		case *pgproto3.ErrorResponse:
			s.fail(fmt.Errorf("replication slot %s: %w", s.c.slot, pgconn.ErrorResponseToPgError(msg)))
			return
		case *pgproto3.CopyData:
			if len(msg.Data) == 0 {
				continue
			}
			switch msg.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(msg.Data[1:])
				if err != nil {
					s.fail(err)
					return
				}
				s.serverEnd.Store(uint64(ka.ServerWALEnd))
				if ka.ReplyRequested {
					nextStatus = time.Time{}
				}
				if txn == nil && ka.ServerWALEnd >= floor {
					floor = ka.ServerWALEnd
					if !s.send(ctx, source.Event{Idle: source.Position(ka.ServerWALEnd.String())}) {
						return
					}
				}
			case pglogrepl.XLogDataByteID:
				xld, err := pglogrepl.ParseXLogData(msg.Data[1:])
				if err != nil {
					s.fail(err)
					return
				}
				if uint64(xld.ServerWALEnd) > s.serverEnd.Load() {
					s.serverEnd.Store(uint64(xld.ServerWALEnd))
				}
				evs, err := d.message(xld, &txn)
				if err != nil {
					s.fail(err)
					return
				}
				if d.end > floor {
					floor = d.end
				}
				for _, ev := range evs {
					send := s.send
					if ev.Txn != nil && ev.Txn.Partial {
						send = s.sendPiece
					}
					if !send(ctx, ev) {
						return
					}
				}
			}
		}
	}
}

func (s *Stream) send(ctx context.Context, ev source.Event) bool {
	select {
	case s.events <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Stream) sendPiece(ctx context.Context, ev source.Event) bool {
	return source.SendPiece(ctx, s.events, ev)
}

func (s *Stream) status(ctx context.Context, reply bool) error {
	lsn := pglogrepl.LSN(s.confirmed.Load())
	return pglogrepl.SendStandbyStatusUpdate(ctx, s.conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: lsn, WALFlushPosition: lsn, WALApplyPosition: lsn, ReplyRequested: reply,
	})
}

// replicaIdentityFlag marks a relation message's column as part of the
// replica identity, the columns a key tuple carries.
const replicaIdentityFlag = 1

// relation is a table as pgoutput described it.
type relation struct {
	ref  source.TableRef
	cols []*pglogrepl.RelationMessageColumn
	need *source.TableNeed
}

// decoder turns pgoutput messages into transactions of changes.
type decoder struct {
	needs map[source.TableRef]*source.TableNeed
	types map[source.TableRef]map[string]uint32
	rels  map[uint32]*relation
	m     *pgtype.Map
	// end is the end of the last transaction decoded.
	end pglogrepl.LSN
}

// message decodes one pgoutput message into the events it completes.
func (d *decoder) message(xld pglogrepl.XLogData, txn **source.Txn) ([]source.Event, error) {
	msg, err := pglogrepl.Parse(xld.WALData)
	if err != nil {
		return nil, fmt.Errorf("decoding pgoutput message: %w", err)
	}
	switch m := msg.(type) {
	case *pglogrepl.BeginMessage:
		*txn = &source.Txn{Commit: m.CommitTime, XID: m.Xid}
	case *pglogrepl.CommitMessage:
		t := *txn
		*txn = nil
		if t == nil {
			return nil, nil
		}
		d.end = m.TransactionEndLSN
		t.End = source.Position(m.TransactionEndLSN.String())
		t.Commit = m.CommitTime
		return []source.Event{{Txn: t}}, nil
	case *pglogrepl.RelationMessage:
		ref := canonical(source.TableRef{Schema: m.Namespace, Name: m.RelationName})
		rel := &relation{ref: ref, cols: m.Columns, need: d.needs[ref]}
		if rel.need == nil {
			rel.need = d.needs[source.TableRef{Name: m.RelationName}]
		}
		_, again := d.rels[m.RelationID]
		again = again || d.differs(rel)
		d.rels[m.RelationID] = rel
		// pgoutput sends a relation's columns before its first change in
		// a session and again after anything invalidated its definition
		// (DDL, a rewrite, ANALYZE). The message shows names and types but
		// not which column is which (a column dropped and added again
		// looks the same) nor whether the table was rewritten: sync
		// compares the catalog with what it recorded (cdc/schema.go). The
		// first message of a session needs an event only when it differs
		// from the catalog when streaming started, which sync compared.
		if rel.need != nil && again {
			return []source.Event{{Schema: &source.SchemaChange{Table: rel.need.Table.Ref}}}, nil
		}
	case *pglogrepl.InsertMessage:
		return d.piece(*txn, d.add(*txn, m.RelationID, source.Insert, nil, false, m.Tuple))
	case *pglogrepl.UpdateMessage:
		return d.piece(*txn, d.add(*txn, m.RelationID, source.Update, m.OldTuple, m.OldTupleType == pglogrepl.UpdateMessageTupleTypeKey, m.NewTuple))
	case *pglogrepl.DeleteMessage:
		return d.piece(*txn, d.add(*txn, m.RelationID, source.Delete, m.OldTuple, m.OldTupleType == pglogrepl.DeleteMessageTupleTypeKey, nil))
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			rel := d.rels[id]
			if rel == nil || *txn == nil {
				continue
			}
			(*txn).Changes = append((*txn).Changes, source.Change{Table: rel.need.Table.Ref, Op: source.Truncate})
		}
	}
	return nil, nil
}

// differs says whether a relation message shows other columns or types
// than the catalog had when streaming started.
func (d *decoder) differs(rel *relation) bool {
	if rel.need == nil {
		return false
	}
	was := d.types[canonical(rel.need.Table.Ref)]
	if len(was) != len(rel.cols) {
		return true
	}
	for _, c := range rel.cols {
		if oid, ok := was[c.Name]; !ok || oid != c.DataType {
			return true
		}
	}
	return false
}

// piece delivers the open transaction's changes as a piece once it holds
// source.PieceChanges of them (see source.Txn.Partial).
func (d *decoder) piece(txn *source.Txn, err error) ([]source.Event, error) {
	if err != nil {
		return nil, err
	}
	if p := txn.Piece(); p != nil {
		return []source.Event{{Txn: p}}, nil
	}
	return nil, nil
}

// add appends a change to txn; oldKey says the before-image is the
// replica identity's key alone (replica identity DEFAULT or USING INDEX).
func (d *decoder) add(txn *source.Txn, relID uint32, op source.Op, old *pglogrepl.TupleData, oldKey bool, new *pglogrepl.TupleData) error {
	rel := d.rels[relID]
	if rel == nil {
		return fmt.Errorf("pgoutput sent a change for unknown relation %d", relID)
	}
	if rel.need == nil || txn == nil {
		return nil // a published table the mapping does not read
	}
	ch := source.Change{Table: rel.need.Table.Ref, Op: op}
	var err error
	if ch.Old, err = d.tuple(rel, old, oldKey); err != nil {
		return err
	}
	if ch.New, err = d.tuple(rel, new, false); err != nil {
		return err
	}
	txn.Changes = append(txn.Changes, ch)
	return nil
}

// tuple decodes the columns of a tuple that sync may need; columns whose
// value was not sent (unchanged TOAST) are absent. A key tuple (keyOnly)
// holds the key columns alone: pgoutput sends its other columns as NULL,
// which is not their value.
func (d *decoder) tuple(rel *relation, t *pglogrepl.TupleData, keyOnly bool) (map[string]value.Value, error) {
	if t == nil {
		return nil, nil
	}
	out := make(map[string]value.Value, len(t.Columns))
	for i, col := range t.Columns {
		if i >= len(rel.cols) {
			break
		}
		rc := rel.cols[i]
		c := rel.need.Table.Column(rc.Name)
		if c == nil || keyOnly && rc.Flags&replicaIdentityFlag == 0 {
			continue
		}
		switch col.DataType {
		case pglogrepl.TupleDataTypeNull:
			out[rc.Name] = value.NullValue()
		case pglogrepl.TupleDataTypeText:
			v, err := d.decodeText(rc.DataType, col.Data, c)
			if err != nil {
				return nil, fmt.Errorf("decoding %s.%s: %w", rel.ref, rc.Name, err)
			}
			out[rc.Name] = v
		}
	}
	return out, nil
}

func (d *decoder) decodeText(oid uint32, data []byte, c *source.Column) (value.Value, error) {
	if t, ok := d.m.TypeForOID(oid); ok && c.Cast == "" {
		v, err := t.Codec.DecodeValue(d.m, oid, pgtype.TextFormatCode, data)
		if err != nil {
			return value.Value{}, err
		}
		return decode(v, c.Kind, c.Elem), nil
	}
	return decode(string(data), c.Kind, c.Elem), nil
}
