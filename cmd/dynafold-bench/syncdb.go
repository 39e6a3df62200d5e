package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// syncDB is one source database of the live-sync benchmark: it creates
// the portfolio dataset and commits the changes sync applies.
type syncDB interface {
	name() string
	short() string
	// create makes database dbName with p portfolios, s servers each and
	// d databases per server, and returns its DSN.
	create(ctx context.Context, dbName string, p, s, d int) (string, error)
	// singleRowBacklog commits n transactions that each move one database
	// to another server of its portfolio: the next one each time round the
	// portfolios, so that every move changes the row (MariaDB logs no event
	// for an update that changes nothing).
	singleRowBacklog(ctx context.Context, dsn string, n, portfolios int) error
	// fanoutBacklog commits n portfolio renames, one per transaction; the
	// names carry run, so that a backlog made again on the same dataset
	// renames every portfolio again (MariaDB logs no event for an update
	// that changes nothing).
	fanoutBacklog(ctx context.Context, dsn string, n, portfolios, run int) error
	// bigTxn commits one transaction that inserts n databases spread over
	// the servers of the first portfolios.
	bigTxn(ctx context.Context, dsn string, n, portfolios int) error
	// settle vacuums what the backlog left (PostgreSQL), so that no
	// autovacuum writes WAL during a measurement that follows.
	settle(ctx context.Context, dsn string) error
	// mover opens a session that commits one move per call.
	mover(ctx context.Context, dsn string) (func(ctx context.Context, server, db string) error, func(), error)
}

func portfolioDDL(p, s, d int, seq func(n int) string, cat func(parts ...string) string) string {
	return fmt.Sprintf(`CREATE TABLE portfolios (id integer PRIMARY KEY, name varchar(100) NOT NULL);
CREATE TABLE servers (id varchar(64) PRIMARY KEY, portfolio_id integer NOT NULL REFERENCES portfolios (id));
CREATE TABLE "databases" (id varchar(64) PRIMARY KEY, server_id varchar(64) NOT NULL REFERENCES servers (id));
CREATE INDEX servers_portfolio ON servers (portfolio_id);
CREATE INDEX databases_server ON "databases" (server_id);
INSERT INTO portfolios SELECT p.n, %[4]s FROM %[1]s p;
INSERT INTO servers SELECT %[5]s, p.n FROM %[1]s p, %[2]s s;
INSERT INTO "databases" SELECT %[6]s, %[5]s FROM %[1]s p, %[2]s s, %[3]s d;`,
		seq(p), seq(s), seq(d),
		cat("'Portfolio '", "p.n"),
		cat("'Srv'", "p.n", "'n'", "s.n"),
		cat("'Db'", "p.n", "'n'", "s.n", "'d'", "d.n"))
}

// pgBench is PostgreSQL.
type pgBench struct {
	server string
	// syncCommit commits the lag run's moves with synchronous_commit on
	// (PostgreSQL's default) instead of the server's setting.
	syncCommit bool
}

func (pgBench) name() string  { return "PostgreSQL" }
func (pgBench) short() string { return "pg" }

func (b pgBench) create(ctx context.Context, dbName string, p, s, d int) (string, error) {
	admin, err := pgx.Connect(ctx, b.server)
	if err != nil {
		return "", err
	}
	defer admin.Close(ctx)
	// A slot left by an earlier run would keep the database busy.
	_, _ = admin.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1", dbName)
	if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS "`+dbName+`" WITH (FORCE)`); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, `CREATE DATABASE "`+dbName+`"`); err != nil {
		return "", err
	}
	u, err := url.Parse(b.server)
	if err != nil {
		return "", err
	}
	u.Path = "/" + dbName
	dsn := u.String()
	seq := func(n int) string { return fmt.Sprintf("(SELECT generate_series(1, %d) AS n)", n) }
	cat := func(parts ...string) string {
		out := ""
		for i, p := range parts {
			if i > 0 {
				out += " || "
			}
			out += p
		}
		return out
	}
	return dsn, b.exec(ctx, dsn, portfolioDDL(p, s, d, seq, cat)+"\nANALYZE;")
}

func (pgBench) exec(ctx context.Context, dsn, script string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.PgConn().Exec(ctx, script).ReadAll()
	return err
}

func (b pgBench) singleRowBacklog(ctx context.Context, dsn string, n, portfolios int) error {
	return b.exec(ctx, dsn, fmt.Sprintf(`DO $$ BEGIN
FOR i IN 1..%d LOOP
  UPDATE "databases" SET server_id = 'Srv' || (1 + i %% %[2]d) || 'n' || (1 + (1 + i / %[2]d) %% 3) WHERE id = 'Db' || (1 + i %% %[2]d) || 'n1d1';
  COMMIT;
END LOOP; END $$`, n, portfolios))
}

func (b pgBench) fanoutBacklog(ctx context.Context, dsn string, n, portfolios, run int) error {
	return b.exec(ctx, dsn, fmt.Sprintf(`DO $$ BEGIN
FOR i IN 1..%d LOOP
  UPDATE portfolios SET name = 'Renamed %d.' || i WHERE id = 1 + i %% %d;
  COMMIT;
END LOOP; END $$`, n, run, portfolios))
}

func (b pgBench) bigTxn(ctx context.Context, dsn string, n, portfolios int) error {
	return b.exec(ctx, dsn, fmt.Sprintf(`INSERT INTO "databases" SELECT 'Big' || g, 'Srv' || (1 + g %% %d) || 'n' || (1 + g %% 10) FROM generate_series(1, %d) g`, portfolios, n))
}

func (b pgBench) settle(ctx context.Context, dsn string) error {
	return b.exec(ctx, dsn, "VACUUM ANALYZE")
}

func (b pgBench) mover(ctx context.Context, dsn string) (func(context.Context, string, string) error, func(), error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, nil, err
	}
	// With synchronous_commit off (the test server's setting), a commit's
	// WAL waits for the WAL writer (wal_writer_delay, 200 ms) before a
	// walsender can send it; on, every commit flushes and wakes the
	// walsender, which costs the server more CPU per commit.
	if b.syncCommit {
		if _, err := conn.Exec(ctx, "SET synchronous_commit = on"); err != nil {
			conn.Close(context.Background())
			return nil, nil, err
		}
	}
	move := func(ctx context.Context, server, db string) error {
		_, err := conn.Exec(ctx, `UPDATE "databases" SET server_id = $1 WHERE id = $2`, server, db)
		return err
	}
	return move, func() { conn.Close(context.Background()) }, nil
}

// myBench is MariaDB or MySQL.
type myBench struct{ server string }

func (myBench) name() string  { return "MariaDB" }
func (myBench) short() string { return "my" }

// open connects with double quotes as identifier quotes ("databases" is a
// reserved word) and multi-statement scripts.
func (b myBench) open(dbName string) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(b.server)
	if err != nil {
		return nil, err
	}
	cfg.DBName = dbName
	cfg.MultiStatements = true
	cfg.Params = map[string]string{"sql_mode": "'ANSI_QUOTES,STRICT_TRANS_TABLES'"}
	return sql.Open("mysql", cfg.FormatDSN())
}

func (b myBench) dsn(dbName string) string {
	cfg, _ := mysql.ParseDSN(b.server)
	cfg.DBName = dbName
	return cfg.FormatDSN()
}

func (b myBench) create(ctx context.Context, dbName string, p, s, d int) (string, error) {
	admin, err := b.open("")
	if err != nil {
		return "", err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+dbName+`"; CREATE DATABASE "`+dbName+`"`); err != nil {
		return "", err
	}
	db, err := b.open(dbName)
	if err != nil {
		return "", err
	}
	defer db.Close()
	max := p
	seq := func(n int) string {
		return fmt.Sprintf(`(WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM x WHERE n < %d) SELECT n FROM x)`, n)
	}
	cat := func(parts ...string) string {
		return "CONCAT(" + joinArgs(parts) + ")"
	}
	script := fmt.Sprintf("SET SESSION max_recursive_iterations = %d;\n", max+10) + portfolioDDL(p, s, d, seq, cat)
	if _, err := db.ExecContext(ctx, script); err != nil {
		return "", err
	}
	return b.dsn(dbName), nil
}

func joinArgs(parts []string) string {
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += ", "
		}
		out += p
	}
	return out
}

// openDSN opens the database of dsn as open does.
func (b myBench) openDSN(dsn string) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return b.open(cfg.DBName)
}

// backlog runs a procedure that commits one statement per transaction.
func (b myBench) backlog(ctx context.Context, dsn string, n int, stmt string) error {
	db, err := b.openDSN(dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, fmt.Sprintf(`DROP PROCEDURE IF EXISTS backlog;
CREATE PROCEDURE backlog() BEGIN
  DECLARE i INT DEFAULT 1;
  WHILE i <= %d DO
    %s;
    COMMIT;
    SET i = i + 1;
  END WHILE;
END;
CALL backlog();`, n, stmt))
	return err
}

func (b myBench) singleRowBacklog(ctx context.Context, dsn string, n, portfolios int) error {
	return b.backlog(ctx, dsn, n, fmt.Sprintf(`UPDATE "databases" SET server_id = CONCAT('Srv', 1 + i %% %[1]d, 'n', 1 + (1 + i DIV %[1]d) %% 3) WHERE id = CONCAT('Db', 1 + i %% %[1]d, 'n1d1')`, portfolios))
}

func (b myBench) fanoutBacklog(ctx context.Context, dsn string, n, portfolios, run int) error {
	return b.backlog(ctx, dsn, n, fmt.Sprintf(`UPDATE portfolios SET name = CONCAT('Renamed %d.', i) WHERE id = 1 + i %% %d`, run, portfolios))
}

func (b myBench) bigTxn(ctx context.Context, dsn string, n, portfolios int) error {
	db, err := b.openDSN(dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, fmt.Sprintf(`SET SESSION max_recursive_iterations = %[2]d;
INSERT INTO "databases" WITH RECURSIVE x(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM x WHERE g < %[2]d)
SELECT CONCAT('Big', g), CONCAT('Srv', 1 + g %% %[1]d, 'n', 1 + g %% 10) FROM x`, portfolios, n))
	return err
}

func (myBench) settle(context.Context, string) error { return nil }

func (b myBench) mover(ctx context.Context, dsn string) (func(context.Context, string, string) error, func(), error) {
	db, err := b.openDSN(dsn)
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	move := func(ctx context.Context, server, dbID string) error {
		_, err := db.ExecContext(ctx, `UPDATE "databases" SET server_id = ? WHERE id = ?`, server, dbID)
		return err
	}
	return move, func() { db.Close() }, nil
}
