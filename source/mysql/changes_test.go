package mysql_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/cdc/cdctest"
	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/source/mysql"
)

// The binlog change source passes the change-source suite, each case on a
// database of its own, read as a replica server_id of its own (the server
// drops a replica connection when another connects with its server_id).
func TestChangeSourceConformance(t *testing.T) {
	cdctest.Run(t, func(t *testing.T) cdctest.Subject {
		raw := testenv.NewMySQLDB(t)
		dsn, err := source.ParseDSN("mysql", raw)
		require.NoError(t, err)
		src, err := mysql.Open(context.Background(), dsn, mysql.Options{MaxConns: 4})
		require.NoError(t, err)
		t.Cleanup(func() { src.Close() })
		db, err := sql.Open("mysql", raw)
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		var b [4]byte
		_, _ = rand.Read(b[:])
		serverID := 3_000_000_000 + binary.BigEndian.Uint32(b[:])%1_000_000_000
		return cdctest.Subject{
			DB:     db,
			Source: src,
			Changes: func() source.ChangeSource {
				return src.NewChanges(serverID)
			},
			FullImages: func(string) string { return "" }, // binlog_row_image = FULL, server-wide
			Retype: func(table, column, typ string) string {
				q := mysql.Dialect().Quote
				return "ALTER TABLE " + q(table) + " MODIFY " + q(column) + " " + typ
			},
		}
	})
}
