package mysql

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/dynafold/dynafold/source"
)

// binlogDecoder groups binlog events into committed transactions of the
// mapped tables' row changes.
//
// A transaction (an event group) starts at a GTID event (MariaDB's, or
// MySQL's GTID or anonymous GTID event) or a BEGIN, and ends at its XID
// event, a COMMIT query (non-transactional engines), or, for DDL, at the
// statement itself. Its end position is the offset just past that last
// event, with the GTID set that includes it.
type binlogDecoder struct {
	c      *Changes
	tables map[source.TableRef]*streamTable
	// db is the DSN's database: the schema of mapped tables named without
	// one.
	db string
	// last is the position just past the last complete event group; file
	// the binlog file being read.
	last binlogPos
	file string

	txn        *source.Txn
	inTxn      bool
	groupStart uint32
	// lastSent is when an event last went out: groups that touch no mapped
	// table are reported as idle positions at most about once per
	// idleEvery, so a busy server's unrelated writes still move the
	// confirmed position.
	lastSent time.Time
}

// open says whether an event group is under way (no idle position may be
// reported inside one).
func (d *binlogDecoder) open() bool { return d.txn != nil }

func (d *binlogDecoder) begin(h *replication.EventHeader) error {
	if d.txn != nil && (len(d.txn.Changes) > 0 || d.txn.Pieced()) {
		return fmt.Errorf("binlog %s:%d: a new transaction starts before the one at %d ended; its changes would be lost", d.file, h.LogPos-h.EventSize, d.groupStart)
	}
	d.txn = &source.Txn{Commit: time.Unix(int64(h.Timestamp), 0)}
	d.groupStart = h.LogPos - h.EventSize
	return nil
}

// event decodes one binlog event into the events it completes.
func (d *binlogDecoder) event(ctx context.Context, ev *replication.BinlogEvent) ([]source.Event, error) {
	h := ev.Header
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		d.file = string(e.NextLogName)
		// A real rotation (not the one the server sends first) moves the
		// idle position to the start of the next file.
		if h.Timestamp != 0 {
			if d.txn == nil {
				d.last = binlogPos{file: d.file, pos: uint32(e.Position), gtid: d.last.gtid}
			}
			d.c.readFileSizes(ctx) // the file just closed has its final size
		}
	case *replication.MariadbGTIDEvent:
		d.inTxn = !e.IsStandalone()
		return nil, d.begin(h)
	case *replication.GTIDEvent:
		d.inTxn = false // a BEGIN query follows for a transaction
		return nil, d.begin(h)
	case *replication.QueryEvent:
		q := strings.TrimSpace(string(e.Query))
		switch {
		case strings.EqualFold(q, "BEGIN"):
			if d.txn == nil {
				_ = d.begin(h)
			}
			d.inTxn = true
		case isCommit(q), strings.EqualFold(q, "ROLLBACK"):
			// A ROLLBACK ends a group only when non-transactional tables
			// changed in it, and those changes stand.
			return d.end(h, e.GSet), nil
		default:
			var out []source.Event
			scs, truncated, err := d.ddl(ctx, string(e.Schema), q)
			if err != nil {
				return nil, err
			}
			for _, sc := range scs {
				out = append(out, source.Event{Schema: sc})
			}
			if d.txn == nil {
				_ = d.begin(h)
			}
			for _, ref := range truncated {
				d.txn.Changes = append(d.txn.Changes, source.Change{Table: ref, Op: source.Truncate})
			}
			if !d.inTxn {
				out = append(out, d.end(h, e.GSet)...)
			}
			return out, nil
		}
	case *replication.RowsEvent:
		if d.txn == nil {
			_ = d.begin(h)
		}
		if err := d.rows(h.EventType, e); err != nil {
			return nil, err
		}
		// A large transaction goes out in pieces (source.Txn.Partial).
		if p := d.txn.Piece(); p != nil {
			return []source.Event{{Txn: p}}, nil
		}
	case *replication.XIDEvent:
		return d.end(h, e.GSet), nil
	default:
		// The server sends heartbeats when it has nothing else to send:
		// everything before the last complete group has been read.
		if (h.EventType == replication.HEARTBEAT_EVENT || h.EventType == replication.HEARTBEAT_LOG_EVENT_V2) && d.txn == nil {
			d.lastSent = time.Now()
			return []source.Event{{Idle: d.last.position()}}, nil
		}
	}
	return nil, nil
}

// end closes the event group whose last event h is: a transaction with
// mapped changes is delivered, any other group only moves the idle
// position.
func (d *binlogDecoder) end(h *replication.EventHeader, gset gomysql.GTIDSet) []source.Event {
	pos := binlogPos{file: d.file, pos: h.LogPos}
	if gset != nil {
		pos.gtid = gset.String()
	}
	t := d.txn
	d.txn, d.inTxn, d.last = nil, false, pos
	if t != nil && (len(t.Changes) > 0 || t.Pieced()) {
		t.End = pos.position()
		if h.LogPos > d.groupStart {
			t.Size = int64(h.LogPos - d.groupStart)
		}
		d.lastSent = time.Now()
		return []source.Event{{Txn: t}}
	}
	if time.Since(d.lastSent) >= idleEvery {
		d.lastSent = time.Now()
		return []source.Event{{Idle: pos.position()}}
	}
	return nil
}

// rows adds a rows event's changes to the open transaction when its table
// is mapped.
func (d *binlogDecoder) rows(et replication.EventType, e *replication.RowsEvent) error {
	st := d.tables[source.TableRef{Schema: string(e.Table.Schema), Name: string(e.Table.Table)}]
	if st == nil {
		return nil
	}
	ref := st.need.Table.Ref
	if e.SkippedColumns != nil {
		for _, skipped := range e.SkippedColumns {
			if len(skipped) > 0 {
				return fmt.Errorf("the binlog holds a partial row image of %s: live sync needs binlog_row_image = FULL", ref)
			}
		}
	}
	var op source.Op
	switch et {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2, replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		op = source.Insert
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1:
		op = source.Update
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		op = source.Delete
	default:
		return fmt.Errorf("binlog event %s on %s is not supported by live sync (partial JSON updates need binlog_row_value_options = '')", et, ref)
	}
	step := 1
	if op == source.Update {
		step = 2 // before and after images, in pairs
	}
	for i := 0; i+step <= len(e.Rows); i += step {
		ch := source.Change{Table: ref, Op: op}
		img, err := rowImage(st.table, e.Table, e.Rows[i])
		if err != nil {
			return err
		}
		switch op {
		case source.Insert:
			ch.New = img
		case source.Delete:
			ch.Old = img
		case source.Update:
			ch.Old = img
			if ch.New, err = rowImage(st.table, e.Table, e.Rows[i+1]); err != nil {
				return err
			}
		}
		d.txn.Changes = append(d.txn.Changes, ch)
	}
	return nil
}

// ddlVerb finds statements that may change a table's definition, or its
// rows without row events.
var ddlVerb = regexp.MustCompile(`(?is)^\s*` + leadingComments + `(alter|drop|rename|truncate|create\s+or\s+replace|optimize)\b`)

// ddl looks at a statement logged as a query. Each mapped table it
// changes is read again from information_schema (the stream decodes later
// rows with the new column order) and gets a schema change carrying the
// parsed statement, for sync to judge. TRUNCATE is no schema change: it
// returns the tables it empties, which are changes of the transaction.
func (d *binlogDecoder) ddl(ctx context.Context, schema, q string) ([]*source.SchemaChange, []source.TableRef, error) {
	m := ddlVerb.FindStringSubmatch(q)
	if m == nil {
		return nil, nil, nil
	}
	if schema == "" {
		schema = d.db
	}
	parsed, err := parseDDL(schema, q)
	if err != nil {
		parsed = d.unparsed(schema, q, strings.EqualFold(m[1], "truncate"))
	}
	var changes []*source.SchemaChange
	var truncated []source.TableRef
	for _, td := range parsed {
		for _, ref := range d.refs() {
			if !covers(td.Ref, ref) {
				continue
			}
			st := d.tables[ref]
			mapped := st.need.Table.Ref
			if td.DDL.Kind == source.DDLTruncate {
				truncated = append(truncated, mapped)
				continue
			}
			ddl := canonicalColumns(td.DDL, st.table)
			if ddl.NewName != nil && mapped.Schema == "" && strings.EqualFold(ddl.NewName.Schema, d.db) {
				ddl.NewName.Schema = "" // named as the mapping names the table
			}
			now, err := d.c.src.Introspect(ctx, []source.TableRef{mapped})
			if err != nil {
				return nil, nil, fmt.Errorf("reading %s again after DDL: %w", mapped, err)
			}
			if t := now[mapped]; t != nil {
				st.table = t
			}
			changes = append(changes, &source.SchemaChange{Table: mapped, DDL: ddl})
		}
	}
	return changes, truncated, nil
}

// unparsed stands for a statement the parser rejects: every mapped table
// it names is truncated (TRUNCATE) or gets an Unparsed DDL, so that sync
// re-derives the table rather than miss a change.
func (d *binlogDecoder) unparsed(schema, q string, truncate bool) []tableDDL {
	text := strings.NewReplacer("`", "", `"`, "").Replace(q)
	var out []tableDDL
	for _, ref := range d.refs() {
		if !mentions(text, schema, ref) {
			continue
		}
		ddl := &source.DDL{Statement: cut(q), Kind: source.DDLOther, Unparsed: true}
		if truncate {
			ddl = &source.DDL{Statement: cut(q), Kind: source.DDLTruncate}
		}
		out = append(out, tableDDL{Ref: ref, DDL: ddl})
	}
	return out
}

// refs are the mapped tables in a fixed order, so that one statement's
// schema changes always come in the same order.
func (d *binlogDecoder) refs() []source.TableRef {
	refs := make([]source.TableRef, 0, len(d.tables))
	for ref := range d.tables {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].Schema != refs[j].Schema {
			return refs[i].Schema < refs[j].Schema
		}
		return refs[i].Name < refs[j].Name
	})
	return refs
}

// covers says whether a table a statement changes is the mapped table
// ref (schema filled in); a name-less table stands for its whole schema.
func covers(changed, ref source.TableRef) bool {
	if changed.Name == "" {
		return strings.EqualFold(changed.Schema, ref.Schema)
	}
	return sameTable(changed, ref)
}

// mentions says whether a statement (quotes removed) names the table, as
// schema.table or, in the statement's default schema, as table.
func mentions(text, defaultSchema string, ref source.TableRef) bool {
	re := regexp.MustCompile(`(?i)(^|[\s,(])(?:([A-Za-z0-9_$]+)\.)?` + regexp.QuoteMeta(ref.Name) + `($|[\s,;(])`)
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		qual := m[2]
		if qual == "" {
			qual = defaultSchema
		}
		if strings.EqualFold(qual, ref.Schema) {
			return true
		}
	}
	return false
}
