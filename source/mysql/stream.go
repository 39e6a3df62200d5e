package mysql

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/go-sql-driver/mysql"
	golog "github.com/siddontang/go-log/log"

	"github.com/dynafold/dynafold/source"
)

// idleEvery is how long the stream waits for an event before it reports
// the source idle at its position; it is also the heartbeat period asked
// of the server, so that an idle source is known to be idle within about
// this long.
const idleEvery = time.Second

// Stream is a running binlog stream of committed transactions, decoded
// from row events.
type Stream struct {
	c        *Changes
	syncer   *replication.BinlogSyncer
	streamer *replication.BinlogStreamer
	events   chan source.Event
	done     chan struct{}
	err      atomic.Pointer[error]
	cancel   context.CancelFunc
	// serverEnd is the latest binlog end the server reported.
	serverEnd atomic.Pointer[binlogPos]
	// keyed are the mapped tables with a primary key, by the name changes
	// carry, for waitVisible.
	keyed  map[source.TableRef]*source.Table
	probes *prober
	// ordered is true when the server makes commits visible in binlog
	// order, so one commit wait covers the transactions before it.
	ordered bool
}

// streamTable is a mapped table as the stream decodes it: its columns as
// of now (re-read after DDL).
type streamTable struct {
	need  *source.TableNeed
	table *source.Table
}

// Stream implements source.ChangeSource: it connects as a replica under the
// Changes' server_id and reads the binlog after from (by GTID set where
// from has one, else by file and offset).
func (c *Changes) Stream(ctx context.Context, from source.Position, needs []source.TableNeed) (source.Stream, error) {
	start, err := parsePos(from)
	if err != nil {
		return nil, err
	}
	syncer, cfg, err := c.newSyncer()
	if err != nil {
		return nil, err
	}
	tables := map[source.TableRef]*streamTable{}
	keyed := map[source.TableRef]*source.Table{}
	for i := range needs {
		n := &needs[i]
		ref := n.Table.Ref
		if ref.Schema == "" {
			ref.Schema = cfg.DBName
		}
		tables[ref] = &streamTable{need: n, table: n.Table}
		if len(n.Table.PrimaryKey) > 0 {
			keyed[n.Table.Ref] = n.Table
		}
	}
	ordered := c.src.mariadb
	if !ordered {
		v, err := c.variables(ctx, "binlog_order_commits")
		if err != nil {
			syncer.Close()
			return nil, fmt.Errorf("reading binlog_order_commits: %w", err)
		}
		ordered = !strings.EqualFold(v["binlog_order_commits"], "OFF")
	}
	probes, err := c.src.newProber(ctx)
	if err != nil {
		syncer.Close()
		return nil, fmt.Errorf("opening the session that waits for commits: %w", err)
	}
	var streamer *replication.BinlogStreamer
	if start.gtid != "" {
		gset, perr := gomysql.ParseGTIDSet(c.flavor(), start.gtid)
		if perr != nil {
			probes.Close()
			syncer.Close()
			return nil, fmt.Errorf("bad GTID set in stream position %q: %w", from, perr)
		}
		streamer, err = syncer.StartSyncGTID(gset)
	} else {
		streamer, err = syncer.StartSync(gomysql.Position{Name: start.file, Pos: start.pos})
	}
	if err != nil {
		probes.Close()
		syncer.Close()
		return nil, fmt.Errorf("starting to read the binlog at %s as server_id %d: %w", from, c.serverID, c.src.dsn.RedactError(err))
	}
	sctx, cancel := context.WithCancel(context.Background())
	s := &Stream{c: c, syncer: syncer, streamer: streamer, events: make(chan source.Event, 256), done: make(chan struct{}), cancel: cancel, keyed: keyed, probes: probes, ordered: ordered}
	end := start
	s.serverEnd.Store(&end)
	d := &binlogDecoder{c: c, tables: tables, db: cfg.DBName, last: start, file: start.file}
	go s.run(sctx, d)
	return s, nil
}

// newSyncer prepares a binlog reader for the DSN's server, as replica
// c.serverID, and returns the parsed DSN.
func (c *Changes) newSyncer() (*replication.BinlogSyncer, *mysql.Config, error) {
	cfg, err := mysql.ParseDSN(c.src.dsn.Secret())
	if err != nil {
		return nil, nil, fmt.Errorf("parsing MySQL DSN %s: invalid DSN", c.src.dsn)
	}
	if cfg.Net != "tcp" {
		return nil, nil, fmt.Errorf("live sync reads the binlog over TCP; the DSN %s connects by %s", c.src.dsn, cfg.Net)
	}
	host, portText, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("the DSN %s: bad address: %w", c.src.dsn, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, nil, fmt.Errorf("the DSN %s: bad port %q", c.src.dsn, portText)
	}
	nullLog, _ := golog.NewNullHandler()
	return replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: c.serverID,
		Flavor:   c.flavor(),
		Host:     host,
		Port:     uint16(port),
		User:     cfg.User,
		Password: cfg.Passwd,
		// go-mysql logs its whole config, password included, at info
		// level: it gets no logger.
		Logger:                  golog.NewDefault(nullLog),
		TLSConfig:               cfg.TLS,
		TimestampStringLocation: time.UTC,
		HeartbeatPeriod:         idleEvery,
		ReadTimeout:             30 * idleEvery,
		// A broken connection ends the stream; sync exits resumably and a
		// rerun goes on from the confirmed position.
		DisableRetrySync: true,
	}), cfg, nil
}

// Events implements source.Stream.
func (s *Stream) Events() <-chan source.Event { return s.events }

// Err implements source.Stream: why Events was closed.
func (s *Stream) Err() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return errors.New("binlog stream ended")
}

// Confirm implements source.Stream. The server keeps no position for a
// binlog reader, so there is nothing to report: the sync checkpoint is the
// only record of it.
func (s *Stream) Confirm(source.Position) {}

// ServerEnd implements source.Stream: the latest binlog end the server
// reported (by an event or a heartbeat).
func (s *Stream) ServerEnd() source.Position { return s.serverEnd.Load().position() }

// Close implements source.Stream.
func (s *Stream) Close() error {
	s.cancel()
	<-s.done
	return nil
}

func (s *Stream) fail(err error) { s.err.CompareAndSwap(nil, &err) }

func (s *Stream) send(ctx context.Context, ev source.Event) bool {
	select {
	case s.events <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// maxPending bounds the events decoded ahead of one commit wait: a burst
// of transactions is delivered after one probe of its last, up to this
// many events at a time.
const maxPending = 256

// endsInPiece reports whether the last event decoded is a piece of a large
// transaction, which goes out at once (source.SendPiece).
func endsInPiece(evs []source.Event) bool {
	return len(evs) > 0 && evs[len(evs)-1].Txn != nil && evs[len(evs)-1].Txn.Partial
}

// read is one result of the binlog reader.
type read struct {
	ev  *replication.BinlogEvent
	err error
}

// pump moves binlog events into reads until the context ends, so that run
// can tell whether another event is already waiting.
func (s *Stream) pump(ctx context.Context, reads chan<- read) {
	for {
		ev, err := s.streamer.GetEvent(ctx)
		select {
		case reads <- read{ev, err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// run reads binlog events until the context ends or reading fails. It
// decodes events while more are waiting, then waits once for the commit of
// the last transaction decoded (see visible.go) and delivers them all.
func (s *Stream) run(ctx context.Context, d *binlogDecoder) {
	defer close(s.done)
	defer close(s.events)
	defer s.syncer.Close()
	defer s.probes.Close()
	pctx, stopPump := context.WithCancel(ctx)
	reads := make(chan read, 64)
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		s.pump(pctx, reads)
	}()
	defer func() {
		stopPump()
		<-pumped
	}()
	var pending []source.Event
	for {
		var r read
		select {
		case r = <-reads:
		default:
			if len(pending) > 0 {
				if !s.deliver(ctx, pending) {
					return
				}
				pending = pending[:0]
				continue
			}
			select {
			case r = <-reads:
			case <-time.After(idleEvery):
				if !d.open() && !s.send(ctx, source.Event{Idle: d.last.position()}) {
					return
				}
				continue
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		if r.err != nil {
			s.fail(fmt.Errorf("reading the binlog as server_id %d: %w", s.c.serverID, s.c.src.dsn.RedactError(r.err)))
			return
		}
		if r.ev.Header.LogPos > 0 {
			end := binlogPos{file: d.file, pos: r.ev.Header.LogPos}
			if old := s.serverEnd.Load(); comparePos("", *old, end) < 0 {
				s.serverEnd.Store(&end)
			}
		}
		evs, err := d.event(ctx, r.ev)
		if err != nil {
			s.fail(err)
			return
		}
		pending = append(pending, evs...)
		if endsInPiece(pending) || len(pending) >= maxPending {
			if !s.deliver(ctx, pending) {
				return
			}
			pending = pending[:0]
		}
	}
}

// deliver waits until the transactions among evs are visible and sends
// evs in order. The server makes commits visible in binlog order (MariaDB
// always, MySQL with binlog_order_commits), so one probe of the last
// transaction that can be probed covers those before it; otherwise each
// is probed.
func (s *Stream) deliver(ctx context.Context, evs []source.Event) bool {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Txn == nil {
			continue
		}
		probed, err := s.waitVisible(ctx, evs[i].Txn)
		if err != nil {
			if ctx.Err() == nil {
				s.fail(err)
			}
			return false
		}
		if probed && s.ordered {
			break
		}
	}
	for _, e := range evs {
		send := s.send
		if e.Txn != nil && e.Txn.Partial {
			send = func(ctx context.Context, ev source.Event) bool { return source.SendPiece(ctx, s.events, ev) }
		}
		if !send(ctx, e) {
			return false
		}
	}
	return true
}

var _ source.Stream = (*Stream)(nil)

// isCommit is a QUERY_EVENT that ends a transaction of a non-transactional
// engine (MyISAM, Aria) or an XA one.
func isCommit(q string) bool { return strings.EqualFold(q, "COMMIT") }
