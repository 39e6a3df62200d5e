package postgres

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Transient reports whether err is a fault a later attempt can outlive: a
// connection refused, reset or lost (a restart, a failover behind the same
// address, pg_terminate_backend), a server shutting down or starting up,
// a serialization failure, a statement whose cached plan DDL outdated. It
// classifies by type and SQLSTATE, and by message only where PostgreSQL
// gives a condition no SQLSTATE of its own.
func Transient(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", // admin_shutdown: pg_terminate_backend, pg_ctl stop -m fast
			"57P02",                                     // crash_shutdown
			"57P03",                                     // cannot_connect_now: starting up, shutting down, in recovery
			"53300",                                     // too_many_connections
			"55006",                                     // object_in_use: the slot is still held by the session that just died
			"40001",                                     // serialization_failure
			"08000", "08001", "08003", "08004", "08006": // connection exceptions
			return true
		}
		// A statement prepared before DDL changed the columns it returns
		// fails once with "cached plan must not change result type"; pgx
		// drops it from its cache, and the next attempt prepares it anew.
		// PostgreSQL gives it no SQLSTATE of its own (0A000 is
		// feature_not_supported), so here alone the message decides.
		return pgErr.Code == "0A000" && strings.Contains(pgErr.Message, "cached plan must not change result type")
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}
