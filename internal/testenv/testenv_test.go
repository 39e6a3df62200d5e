package testenv

import (
	"context"
	"database/sql"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestPostgresDatabasePerTest(t *testing.T) {
	dsn := NewPostgresDB(t)
	ExecSQL(t, "postgres", dsn, "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1), (2);")
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT count(*) FROM t").Scan(&n))
	require.Equal(t, 2, n)
}

func TestMySQLDatabasePerTest(t *testing.T) {
	dsn := NewMySQLDB(t)
	ExecSQL(t, "mysql", dsn, "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1), (2), (3);")
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM t").Scan(&n))
	require.Equal(t, 3, n)
}

func TestDynamoClient(t *testing.T) {
	c := DynamoClient(t)
	_, err := c.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	require.NoError(t, err)
	require.Regexp(t, `^dft_testdynamoclient_[0-9a-f]{8}$`, NewTableName(t))
}

func TestEmulators(t *testing.T) {
	for _, e := range Emulators() {
		t.Run(e.Name, func(t *testing.T) {
			_, err := e.Client(t).ListTables(context.Background(), &dynamodb.ListTablesInput{})
			require.NoError(t, err)
		})
	}
}
