package mysql

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"
)

// MySQL and MariaDB error numbers after which reading again is safe.
const (
	erConCount         = 1040 // ER_CON_COUNT_ERROR: too many connections
	erServerShutdown   = 1053 // ER_SERVER_SHUTDOWN
	erQueryInterrupted = 1317 // ER_QUERY_INTERRUPTED (KILL QUERY)
	erConnectionKilled = 1927 // ER_CONNECTION_KILLED (MariaDB KILL)
	erLockDeadlock     = 1213 // ER_LOCK_DEADLOCK
	// ER_TABLE_DEF_CHANGED: a consistent-snapshot read met a table that
	// DDL (TRUNCATE, a rebuild) recreated after the snapshot began; the
	// server asks for the transaction to be retried.
	erTableDefChanged = 1412
)

// Transient reports whether err is a fault a later attempt can outlive: a
// connection refused, reset or lost (a restart, KILL), a server shutting
// down, a deadlock. It classifies by type and error number, for both the
// query driver and the binlog reader, never by message.
func Transient(err error) bool {
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return transientNumber(myErr.Number)
	}
	var binlogErr *gomysql.MyError
	if errors.As(err, &binlogErr) {
		return transientNumber(binlogErr.Code)
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, gomysql.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func transientNumber(n uint16) bool {
	switch n {
	case erConCount, erServerShutdown, erQueryInterrupted, erConnectionKilled, erLockDeadlock, erTableDefChanged:
		return true
	}
	return false
}
