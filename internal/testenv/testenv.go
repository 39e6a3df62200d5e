// Package testenv locates the services integration tests run against —
// PostgreSQL, MariaDB and a DynamoDB-compatible server — and gives each
// test its own database and table.
//
// The services are named by environment variables, which scripts/test.sh
// sets after starting them:
//
//	DYNAFOLD_TEST_PG_DSN             postgres://…/postgres
//	DYNAFOLD_TEST_MYSQL_DSN          user:pass@tcp(host:port)/
//	DYNAFOLD_TEST_DYNAMODB_ENDPOINT  http://127.0.0.1:58000 (dynalite)
//	DYNAFOLD_TEST_MOTO_ENDPOINT      http://127.0.0.1:58100 (moto's server)
//	DYNAFOLD_TEST_S3_ENDPOINT        http://127.0.0.1:59000 (s3rver)
//
// A test skips when its variable is unset, saying which, unless
// DYNAFOLD_INTEGRATION=1, where a missing or unreachable service fails it.
package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// Integration reports whether DYNAFOLD_INTEGRATION=1 (CI): services must be
// there.
func Integration() bool { return os.Getenv("DYNAFOLD_INTEGRATION") == "1" }

// lookup returns the variable's value, skipping or failing the test when
// it is unset, and failing when the service does not answer.
func lookup(t testing.TB, name string, reach func(string) error) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if Integration() {
			t.Fatalf("DYNAFOLD_INTEGRATION=1 but %s is not set; run the tests with scripts/test.sh", name)
		}
		t.Skipf("set %s to run this test (scripts/test.sh does)", name)
	}
	if err := reach(v); err != nil {
		t.Fatalf("%s=%s is set but the service does not answer: %v", name, v, err)
	}
	return v
}

// PostgresDSN returns the PostgreSQL server's DSN (its postgres database).
func PostgresDSN(t testing.TB) string {
	return lookup(t, "DYNAFOLD_TEST_PG_DSN", func(dsn string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	})
}

// MySQLDSN returns the MariaDB/MySQL server's DSN (no database selected).
func MySQLDSN(t testing.TB) string {
	return lookup(t, "DYNAFOLD_TEST_MYSQL_DSN", func(dsn string) error {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return db.PingContext(ctx)
	})
}

// DynamoEndpoint returns the DynamoDB-compatible server's URL (dynalite).
func DynamoEndpoint(t testing.TB) string {
	return lookup(t, "DYNAFOLD_TEST_DYNAMODB_ENDPOINT", dialEndpoint)
}

// uniqueName makes a name from the test's name and a random suffix, within
// max characters of [a-z0-9_].
func uniqueName(t testing.TB, prefix string, max int) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	suffix := hex.EncodeToString(b)
	base := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "_"))
	if room := max - len(prefix) - len(suffix) - 2; len(base) > room {
		base = base[len(base)-room:]
	}
	return strings.Trim(prefix+"_"+base, "_") + "_" + suffix
}

// NewPostgresDB creates a fresh database for the test, dropped when it
// ends, and returns its DSN.
func NewPostgresDB(t testing.TB) string {
	t.Helper()
	base := PostgresDSN(t)
	shareServer(t, "postgres")
	name := uniqueName(t, "dft", 63)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// NewMySQLDB creates a fresh database for the test, dropped when it ends,
// and returns its DSN in the driver's form.
func NewMySQLDB(t testing.TB) string {
	t.Helper()
	base := MySQLDSN(t)
	shareServer(t, "mysql")
	name := uniqueName(t, "dft", 64)
	db, err := sql.Open("mysql", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		d, err := sql.Open("mysql", base)
		if err != nil {
			return
		}
		defer d.Close()
		_, _ = d.Exec("DROP DATABASE IF EXISTS `" + name + "`")
	})
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = name
	return cfg.FormatDSN()
}

// LoadSQL runs SQL files (many statements each) in the database: driver
// is "postgres" or "mysql".
func LoadSQL(t testing.TB, driver, dsn string, files ...string) {
	t.Helper()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ExecSQL(t, driver, dsn, string(data))
	}
}

// ExecSQL runs statements in the database.
func ExecSQL(t testing.TB, driver, dsn, statements string) {
	t.Helper()
	if err := Exec(context.Background(), driver, dsn, statements); err != nil {
		t.Fatalf("running SQL: %v", err)
	}
}

// Exec runs a script of statements in the database: driver is
// "postgres" or "mysql".
func Exec(ctx context.Context, driver, dsn, statements string) error {
	s, err := OpenSession(ctx, driver, dsn)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Exec(ctx, statements)
}

// Session is one connection a test runs many scripts on: on a busy
// machine a connection for each of hundreds of transactions costs more
// than the transactions (PostgreSQL's SCRAM exchange, MariaDB's
// handshake).
type Session struct {
	pg *pgx.Conn
	db *sql.DB
}

// OpenSession connects to the database: driver is "postgres" or "mysql".
func OpenSession(ctx context.Context, driver, dsn string) (*Session, error) {
	switch driver {
	case "postgres":
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return nil, err
		}
		return &Session{pg: conn}, nil
	case "mysql":
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return nil, err
		}
		cfg.MultiStatements = true
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		return &Session{db: db}, nil
	}
	return nil, fmt.Errorf("unknown driver %q", driver)
}

// Exec runs a script of statements, in one round trip.
func (s *Session) Exec(ctx context.Context, statements string) error {
	if s.pg != nil {
		// The simple protocol runs a whole script in one round trip.
		_, err := s.pg.PgConn().Exec(ctx, statements).ReadAll()
		return err
	}
	_, err := s.db.ExecContext(ctx, statements)
	return err
}

// Close ends the session.
func (s *Session) Close() error {
	if s.pg != nil {
		return s.pg.Close(context.Background())
	}
	return s.db.Close()
}

// Recreate drops and creates database name on the server and returns its
// DSN.
func Recreate(ctx context.Context, driver, serverDSN, name string) (string, error) {
	switch driver {
	case "postgres":
		if err := Exec(ctx, driver, serverDSN, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
			return "", err
		}
		if err := Exec(ctx, driver, serverDSN, `CREATE DATABASE "`+name+`"`); err != nil {
			return "", err
		}
		u, err := url.Parse(serverDSN)
		if err != nil {
			return "", err
		}
		u.Path = "/" + name
		return u.String(), nil
	case "mysql":
		if err := Exec(ctx, driver, serverDSN, "DROP DATABASE IF EXISTS `"+name+"`; CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
			return "", err
		}
		cfg, err := mysql.ParseDSN(serverDSN)
		if err != nil {
			return "", err
		}
		cfg.DBName = name
		return cfg.FormatDSN(), nil
	}
	return "", fmt.Errorf("unknown driver %q", driver)
}

// NewTableName returns a DynamoDB table name unique to the test.
func NewTableName(t testing.TB) string {
	return uniqueName(t, "dft", 200)
}

// DynamoClient returns a client for the test endpoint with dummy
// credentials.
func DynamoClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	return dynamoClient(t, DynamoEndpoint(t))
}

// DeleteTableOnCleanup removes the table when the test ends.
func DeleteTableOnCleanup(t testing.TB, c *dynamodb.Client, table string) {
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
}

// Driver names the two SQL sources, for table-driven tests over both.
type Driver struct {
	Name  string // "postgres" or "mysql"
	NewDB func(testing.TB) string
}

// Drivers returns both sources.
func Drivers() []Driver {
	return []Driver{{"postgres", NewPostgresDB}, {"mysql", NewMySQLDB}}
}

// String helps subtest names.
func (d Driver) String() string { return d.Name }

// Rows runs a query and returns its rows with every value as text (NULL
// as ""), for assertions on server state.
func Rows(t testing.TB, driver, dsn, query string) [][]string {
	t.Helper()
	rows, err := QueryRows(context.Background(), driver, dsn, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return rows
}

// QueryRows runs setup statements, then query, on one session, and
// returns the query's rows with every value as text (NULL as ""), or the
// error: for helpers that must not fail the test (a server that may be
// down).
func QueryRows(ctx context.Context, driver, dsn, query string, setup ...string) ([][]string, error) {
	var out [][]string
	switch driver {
	case "postgres":
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		for _, st := range setup {
			if _, err := conn.Exec(ctx, st); err != nil {
				return nil, err
			}
		}
		rows, err := conn.Query(ctx, query, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var row []string
			for _, raw := range rows.RawValues() {
				row = append(row, string(raw))
			}
			out = append(out, row)
		}
		return out, rows.Err()
	case "mysql":
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return nil, err
		}
		defer db.Close()
		conn, err := db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		for _, st := range setup {
			if _, err := conn.ExecContext(ctx, st); err != nil {
				return nil, err
			}
		}
		rows, err := conn.QueryContext(ctx, query)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			raw := make([]sql.RawBytes, len(cols))
			dest := make([]any, len(cols))
			for i := range raw {
				dest[i] = &raw[i]
			}
			if err := rows.Scan(dest...); err != nil {
				return nil, err
			}
			row := make([]string, len(cols))
			for i, b := range raw {
				row[i] = string(b)
			}
			out = append(out, row)
		}
		return out, rows.Err()
	}
	return nil, fmt.Errorf("unknown driver %q", driver)
}
