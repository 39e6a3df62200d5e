package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dynafold/dynafold/source"
)

// Changes is PostgreSQL's change log for live sync: a logical replication
// slot (pgoutput) and a publication of the mapped tables, both named by
// the caller (dynafold_<table> by default).
type Changes struct {
	src         *Source
	slot        string
	publication string
	// held is the replication connection that created the slot: it keeps
	// the exported snapshot alive until streaming starts on it.
	held *pgconn.PgConn
	// heartbeat is the table Heartbeat writes ("": none); heartbeatMade
	// is set once it is known to exist.
	heartbeat     string
	heartbeatMade bool
}

var (
	_ source.ChangeSource = (*Changes)(nil)
	_ source.Heartbeater  = (*Changes)(nil)
	_ source.Retainer     = (*Changes)(nil)
	_ source.Stream       = (*Stream)(nil)
)

// NewChanges reads src's change log through the named slot and
// publication, named as FoldSlotName folds them: the replication protocol
// folds an unquoted name itself, and the catalog queries here do not.
func (s *Source) NewChanges(slot, publication string) *Changes {
	return &Changes{src: s, slot: slot, publication: publication}
}

// Slot returns the replication slot's name.
func (c *Changes) Slot() string { return c.slot }

// Check implements the prerequisite checks of live sync: logical WAL, a
// role that may replicate, replica identities that carry the before-images
// sync needs, and a free slot and WAL sender.
func (c *Changes) Check(ctx context.Context, needs []source.TableNeed) ([]source.Problem, error) {
	var probs []source.Problem
	q := func(sql string, args []any, dst ...any) error {
		return c.src.dsn.RedactError(c.src.pool.QueryRow(ctx, sql, args...).Scan(dst...))
	}
	var walLevel, user string
	if err := q("SELECT current_setting('wal_level'), current_user", nil, &walLevel, &user); err != nil {
		return nil, fmt.Errorf("checking wal_level: %w", err)
	}
	if walLevel != "logical" {
		probs = append(probs, source.Problem{
			What: fmt.Sprintf("wal_level is %s; live sync needs logical decoding", walLevel),
			Fix:  "ALTER SYSTEM SET wal_level = logical; then restart PostgreSQL (Amazon RDS and Aurora: set rds.logical_replication = 1 in the parameter group and reboot; Cloud SQL: cloudsql.logical_decoding = on)",
		})
	}
	var mayReplicate bool
	if err := q(`SELECT r.rolreplication OR r.rolsuper
		OR EXISTS (SELECT 1 FROM pg_roles g WHERE g.rolname = 'rds_replication' AND pg_has_role(r.oid, g.oid, 'member'))
		FROM pg_roles r WHERE r.rolname = current_user`, nil, &mayReplicate); err != nil {
		return nil, fmt.Errorf("checking the role's REPLICATION attribute: %w", err)
	}
	if !mayReplicate {
		probs = append(probs, source.Problem{
			What: fmt.Sprintf("role %s may not replicate", user),
			Fix:  fmt.Sprintf("ALTER ROLE %s WITH REPLICATION; (Amazon RDS and Aurora: GRANT rds_replication TO %s;)", dialect{}.Quote(user), dialect{}.Quote(user)),
		})
	}
	for _, n := range needs {
		var ident string
		err := q(`SELECT c.relreplident::text FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE c.relname = $1 AND ns.nspname = COALESCE(NULLIF($2, ''), current_schema())`,
			[]any{n.Table.Ref.Name, n.Table.Ref.Schema}, &ident)
		if err != nil {
			return nil, fmt.Errorf("checking the replica identity of %s: %w", n.Table.Ref, err)
		}
		fix := fmt.Sprintf("ALTER TABLE %s REPLICA IDENTITY FULL;", source.QuoteRef(dialect{}, n.Table.Ref))
		switch {
		case ident == "n":
			probs = append(probs, source.Problem{What: fmt.Sprintf("table %s has REPLICA IDENTITY NOTHING: its updates and deletes carry no key", n.Table.Ref), Fix: fix})
		case ident == "d" && len(n.Table.PrimaryKey) == 0:
			probs = append(probs, source.Problem{What: fmt.Sprintf("table %s has no primary key, so its default replica identity carries no key", n.Table.Ref), Fix: fix})
		case ident != "f" && len(n.OldColumns) > 0:
			probs = append(probs, source.Problem{
				What: fmt.Sprintf("table %s must publish full before-images: sync needs the old %s of a changed or deleted row to find the items it leaves", n.Table.Ref, strings.Join(n.OldColumns, ", ")),
				Fix:  fix,
			})
		}
	}
	var slotExists bool
	var slots, maxSlots, senders, maxSenders int
	if err := q(`SELECT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1),
		(SELECT count(*) FROM pg_replication_slots), current_setting('max_replication_slots')::int,
		(SELECT count(*) FROM pg_stat_replication), current_setting('max_wal_senders')::int`,
		[]any{c.slot}, &slotExists, &slots, &maxSlots, &senders, &maxSenders); err != nil {
		return nil, fmt.Errorf("checking replication slots: %w", err)
	}
	if !slotExists && slots >= maxSlots {
		probs = append(probs, source.Problem{
			What: fmt.Sprintf("all %d replication slots are in use (max_replication_slots)", maxSlots),
			Fix:  "raise max_replication_slots and restart PostgreSQL, or drop a slot nobody reads: SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE NOT active;",
		})
	}
	if senders >= maxSenders {
		probs = append(probs, source.Problem{
			What: fmt.Sprintf("all %d WAL senders are in use (max_wal_senders)", maxSenders),
			Fix:  "raise max_wal_senders and restart PostgreSQL",
		})
	}
	var pubExists bool
	if err := q("SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)", []any{c.publication}, &pubExists); err != nil {
		return nil, fmt.Errorf("checking publication %s: %w", c.publication, err)
	}
	if !pubExists {
		var tables []string
		for _, n := range needs {
			var owns bool
			err := q(`SELECT pg_has_role(current_user, c.relowner, 'USAGE') FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
				WHERE c.relname = $1 AND ns.nspname = COALESCE(NULLIF($2, ''), current_schema())`,
				[]any{n.Table.Ref.Name, n.Table.Ref.Schema}, &owns)
			if err != nil {
				return nil, fmt.Errorf("checking the owner of %s: %w", n.Table.Ref, err)
			}
			tables = append(tables, source.QuoteRef(dialect{}, n.Table.Ref))
			if !owns {
				probs = append(probs, source.Problem{
					What: fmt.Sprintf("role %s does not own table %s, so it cannot create the publication %s", user, n.Table.Ref, c.publication),
					Fix:  fmt.Sprintf("as the tables' owner: CREATE PUBLICATION %s FOR TABLE %s;", dialect{}.Quote(c.publication), strings.Join(tables, ", ")+"…"),
				})
				break
			}
		}
	}
	return probs, nil
}

// admin runs DDL (publications) on a session that is not read-only; the
// reading pool never writes.
func (c *Changes) admin(ctx context.Context, fn func(*pgx.Conn) error) error {
	cfg, err := pgx.ParseConfig(c.src.dsn.Secret())
	if err != nil {
		return c.src.dsn.RedactError(err)
	}
	cfg.RuntimeParams["application_name"] = "dynafold"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return c.src.dsn.RedactError(err)
	}
	defer conn.Close(context.Background())
	return c.src.dsn.RedactError(fn(conn))
}

// replication opens a walsender connection for logical replication.
func (c *Changes) replication(ctx context.Context) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(c.src.dsn.Secret())
	if err != nil {
		return nil, c.src.dsn.RedactError(err)
	}
	cfg.RuntimeParams["replication"] = "database"
	cfg.RuntimeParams["application_name"] = "dynafold-sync"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening a replication connection: %w", c.src.dsn.RedactError(err))
	}
	return conn, nil
}

// Prepare creates the publication and the slot when they do not exist. A
// new slot exports the snapshot of its consistent point, which stays valid
// until Stream starts on the same connection. The slot keeps the position
// on the server, so the one sync recorded is not needed.
func (c *Changes) Prepare(ctx context.Context, needs []source.TableNeed, _ source.Position) (source.StreamStart, error) {
	err := c.admin(ctx, func(conn *pgx.Conn) error {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)", c.publication).Scan(&exists); err != nil {
			return err
		}
		published := map[source.TableRef]bool{}
		if exists {
			rows, err := conn.Query(ctx, "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = $1", c.publication)
			if err != nil {
				return err
			}
			for rows.Next() {
				var r source.TableRef
				if err := rows.Scan(&r.Schema, &r.Name); err != nil {
					return err
				}
				published[r] = true
			}
			if err := rows.Err(); err != nil {
				return err
			}
		}
		var missing []string
		for _, n := range needs {
			ref := n.Table.Ref
			if ref.Schema == "" {
				if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&ref.Schema); err != nil {
					return err
				}
			}
			if !published[ref] {
				missing = append(missing, source.QuoteRef(dialect{}, n.Table.Ref))
			}
		}
		switch {
		case !exists:
			_, err := conn.Exec(ctx, "CREATE PUBLICATION "+dialect{}.Quote(c.publication)+" FOR TABLE "+strings.Join(missing, ", "))
			return err
		case len(missing) > 0:
			_, err := conn.Exec(ctx, "ALTER PUBLICATION "+dialect{}.Quote(c.publication)+" ADD TABLE "+strings.Join(missing, ", "))
			return err
		}
		return nil
	})
	if err != nil {
		return source.StreamStart{}, fmt.Errorf("creating publication %s: %w", c.publication, err)
	}
	var confirmed *string
	var activePID *int32
	err = c.src.pool.QueryRow(ctx, "SELECT confirmed_flush_lsn::text, active_pid FROM pg_replication_slots WHERE slot_name = $1", c.slot).Scan(&confirmed, &activePID)
	switch {
	case err == nil && confirmed != nil:
		return source.StreamStart{From: source.Position(*confirmed)}, nil
	case err == nil:
		if err := c.abandonUnfinished(ctx, activePID); err != nil {
			return source.StreamStart{}, err
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return source.StreamStart{}, fmt.Errorf("looking up slot %s: %w", c.slot, c.src.dsn.RedactError(err))
	}
	conn, err := c.replication(ctx)
	if err != nil {
		return source.StreamStart{}, err
	}
	res, err := pglogrepl.CreateReplicationSlot(ctx, conn, c.slot, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "EXPORT_SNAPSHOT"})
	if err != nil {
		conn.Close(context.Background())
		return source.StreamStart{}, fmt.Errorf("creating replication slot %s: %w", c.slot, c.src.dsn.RedactError(err))
	}
	c.held = conn
	return source.StreamStart{From: source.Position(res.ConsistentPoint), Snapshot: res.SnapshotName, Created: true}, nil
}

// abandonUnfinished removes a slot whose creation never finished: it has
// no confirmed position yet. CREATE_REPLICATION_SLOT waits for every
// transaction running when it started; a sync killed meanwhile leaves its
// walsender waiting, holding the half-made slot, until that backend
// notices its client is gone, which it does not while it waits. Creating
// the slot again then fails with "already exists". Nothing was ever
// confirmed or loaded from such a slot, so its walsender is ended (the
// slot is temporary until created, and goes with it) and the slot made
// anew. (Two syncs creating the same slot at once would be a mistake of
// their own: PostgreSQL lets one consumer use a slot.)
func (c *Changes) abandonUnfinished(ctx context.Context, activePID *int32) error {
	if activePID != nil {
		if _, err := c.src.pool.Exec(ctx, "SELECT pg_terminate_backend($1)", *activePID); err != nil {
			return fmt.Errorf("ending the walsender (pid %d) of slot %s, whose creation never finished: %w", *activePID, c.slot, c.src.dsn.RedactError(err))
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var active bool
		err := c.src.pool.QueryRow(ctx, "SELECT active FROM pg_replication_slots WHERE slot_name = $1", c.slot).Scan(&active)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return fmt.Errorf("looking up slot %s: %w", c.slot, c.src.dsn.RedactError(err))
		case !active:
			if _, err := c.src.pool.Exec(ctx, "SELECT pg_drop_replication_slot($1)", c.slot); err != nil {
				return fmt.Errorf("dropping slot %s, whose creation never finished: %w", c.slot, c.src.dsn.RedactError(err))
			}
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("slot %s, whose creation never finished, is still held by another process after 30 s: run `dynafold sync cleanup` and start again", c.slot)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Head returns the current end of WAL: every transaction committed before
// the call ends at or before it. It is the insert position, not
// pg_current_wal_lsn() (the write position), which lags behind commits made
// with synchronous_commit = off until the WAL writer catches up.
//
// The WAL up to it is then flushed, by the commit of a transaction that
// writes only an empty logical decoding message (which the publication
// does not stream). A walsender sends only flushed WAL, and the WAL
// writer leaves a partial page of records that are not commits (the
// pruning of pages that sync's own reads did, say) unflushed until the
// next commit or the next running-transactions record, up to 15 s later:
// sync --until-caught-up then waited that long for WAL that holds no
// change. A transaction that wrote WAL commits with a flush under
// synchronous_commit = on; one that only took a transaction id would not.
// Where the transaction cannot be run, the position is returned alone.
func (c *Changes) Head(ctx context.Context) (source.Position, error) {
	var lsn string
	if err := c.src.pool.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		return "", fmt.Errorf("reading the current WAL position: %w", c.src.dsn.RedactError(err))
	}
	_ = pgx.BeginFunc(ctx, c.src.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = on"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "SELECT pg_logical_emit_message(true, 'dynafold', '')")
		return err
	})
	return source.Position(lsn), nil
}

// Compare orders two LSNs.
func (c *Changes) Compare(a, b source.Position) int {
	x, _ := pglogrepl.ParseLSN(string(a))
	y, _ := pglogrepl.ParseLSN(string(b))
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// Distance is how many bytes of WAL lie between from and to.
func (c *Changes) Distance(from, to source.Position) int64 {
	x, _ := pglogrepl.ParseLSN(string(from))
	y, _ := pglogrepl.ParseLSN(string(to))
	if y <= x {
		return 0
	}
	return int64(y - x)
}

// Cleanup drops the slot and the publication; it is not an error when
// they are already gone. It returns what it dropped.
func (c *Changes) Cleanup(ctx context.Context) ([]string, error) {
	c.closeHeld()
	var dropped []string
	err := c.admin(ctx, func(conn *pgx.Conn) error {
		var active *int32
		err := conn.QueryRow(ctx, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1", c.slot).Scan(&active)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case active != nil:
			return fmt.Errorf("slot %s is in use by process %d (a running dynafold sync?); stop it first", c.slot, *active)
		default:
			if _, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", c.slot); err != nil {
				return err
			}
			dropped = append(dropped, "replication slot "+c.slot)
		}
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)", c.publication).Scan(&exists); err != nil || !exists {
			return err
		}
		if _, err := conn.Exec(ctx, "DROP PUBLICATION "+dialect{}.Quote(c.publication)); err != nil {
			return err
		}
		dropped = append(dropped, "publication "+c.publication)
		return nil
	})
	return dropped, err
}

func (c *Changes) closeHeld() {
	if c.held != nil {
		c.held.Close(context.Background())
		c.held = nil
	}
}

// Close releases the held replication connection, if any.
func (c *Changes) Close() error {
	c.closeHeld()
	return nil
}
