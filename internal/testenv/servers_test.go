package testenv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A private PostgreSQL server restarts with its data, and a standby made
// from it takes writes once promoted.
func TestPrivatePostgres(t *testing.T) {
	t.Parallel()
	s := StartPostgres(t, "max_slot_wal_keep_size=64MB")
	dsn := s.NewDB(t)
	ExecSQL(t, "postgres", dsn, "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1);")
	require.Equal(t, [][]string{{"64MB"}}, Rows(t, "postgres", dsn, "SHOW max_slot_wal_keep_size"))
	s.Restart(t)
	require.Equal(t, [][]string{{"1"}}, Rows(t, "postgres", dsn, "SELECT count(*) FROM t"))

	sb := s.Standby(t)
	s.Stop(t)
	sb.Promote(t)
	standby := strings.Replace(dsn, s.Addr(), sb.Addr(), 1)
	ExecSQL(t, "postgres", standby, "INSERT INTO t VALUES (2)")
	require.Equal(t, [][]string{{"2"}}, Rows(t, "postgres", standby, "SELECT count(*) FROM t"))
}

// A private MariaDB server logs row binlogs under its own server id, and
// keeps its data across a stop and a start.
func TestPrivateMariaDB(t *testing.T) {
	t.Parallel()
	s := StartMariaDB(t, "--server-id=7", "--gtid-domain-id=3")
	dsn := s.NewDB(t)
	ExecSQL(t, "mysql", dsn, "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1);")
	require.Equal(t, [][]string{{"ROW", "7", "3"}}, Rows(t, "mysql", dsn, "SELECT @@binlog_format, @@server_id, @@gtid_domain_id"))
	s.Restart(t)
	require.Equal(t, [][]string{{"1"}}, Rows(t, "mysql", dsn, "SELECT count(*) FROM t"))
}
