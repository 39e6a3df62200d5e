package syncfuzz

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"

	_ "github.com/go-sql-driver/mysql" // database/sql driver "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// dialect is what differs between PostgreSQL and MySQL/MariaDB in the SQL
// the fuzzer writes. Every value goes into the statement as a literal, so
// that the operation log prints exactly what ran.
type dialect interface {
	name() string
	sqlDriver() string
	quote(ident string) string
	// text casts a column to its text form, for keys read back.
	text(col string) string
	str(s string) string
	bytes(b []byte) string
	// session settings: a lock wait fails at once instead of blocking the
	// one goroutine that drives every connection.
	session() []string
	// fuzzDSN is the DSN of the fuzzer's own connections.
	fuzzDSN(dsn string) string
	// patient undoes session's lock setting, for the hot row's sessions,
	// which must wait for each other.
	patient() string
	isLockWait(err error) bool
	columnsQuery() string
	readEnums(ctx context.Context, db *sql.DB, s *schema) error
	keys(ctx context.Context, db *sql.DB) ([]keyRow, error)
	addColumn(table, col string) string
	// The schema changes of ddl.go (ddl_sql.go): a column's definition
	// read back, the clause that makes it again with another default,
	// the statement that gives it another type, a varchar type.
	columnDef(ctx context.Context, db *sql.DB, table, col string) (colDef, error)
	columnClause(col string, c colDef, dflt string) string
	retype(table, col string, c colDef, typ, using string) string
	varchar(n int) string
	// sessionsQuery lists the server's sessions on the database, for a
	// statement held up too long.
	sessionsQuery() string
}

func dialectFor(engine string) (dialect, error) {
	switch engine {
	case "postgres":
		return pgDialect{}, nil
	case "mysql":
		return myDialect{}, nil
	}
	return nil, fmt.Errorf("unknown engine %q (postgres or mysql)", engine)
}

type pgDialect struct{}

func (pgDialect) name() string             { return "postgres" }
func (pgDialect) sqlDriver() string        { return "pgx" }
func (pgDialect) quote(id string) string   { return `"` + strings.ReplaceAll(id, `"`, `""`) + `"` }
func (d pgDialect) text(col string) string { return d.quote(col) + "::text" }
func (pgDialect) str(s string) string      { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
func (pgDialect) bytes(b []byte) string    { return `'\x` + hex.EncodeToString(b) + `'::bytea` }

func (pgDialect) session() []string {
	return []string{"SET lock_timeout = '1ms'", "SET TIME ZONE 'UTC'"}
}

// fuzzDSN asks pgx for the simple protocol: every statement the fuzzer
// sends is new text, which pgx would otherwise prepare (a round trip more)
// and cache (evicting and deallocating the last ones).
func (pgDialect) fuzzDSN(dsn string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "default_query_exec_mode=simple_protocol"
}

func (pgDialect) patient() string { return "SET lock_timeout = 0" }

func (pgDialect) isLockWait(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "55P03") || strings.Contains(err.Error(), "40P01"))
}

func (pgDialect) columnsQuery() string {
	return `SELECT table_name, column_name, lower(data_type), lower(coalesce(udt_name, '')), is_nullable,
	character_maximum_length, numeric_precision, numeric_scale,
	column_default IS NOT NULL, (is_generated = 'ALWAYS' OR coalesce(identity_generation, '') = 'ALWAYS')
FROM information_schema.columns c
WHERE table_schema = 'public' AND EXISTS (
	SELECT 1 FROM information_schema.tables t
	WHERE t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE')
ORDER BY table_name, ordinal_position`
}

func (pgDialect) readEnums(ctx context.Context, db *sql.DB, s *schema) error {
	rows, err := db.QueryContext(ctx, `SELECT c.table_name, c.column_name, e.enumlabel
FROM information_schema.columns c
JOIN pg_type t ON t.typname = c.udt_name
JOIN pg_enum e ON e.enumtypid = t.oid
WHERE c.table_schema = 'public'
ORDER BY c.table_name, c.column_name, e.enumsortorder`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tn, cn, label string
		if err := rows.Scan(&tn, &cn, &label); err != nil {
			return err
		}
		if t := s.tables[tn]; t != nil && t.col(cn) != nil {
			t.col(cn).enum = append(t.col(cn).enum, label)
		}
	}
	// A user-defined type that is not an enum stays out of reach.
	for _, t := range s.tables {
		for _, c := range t.cols {
			if c.kind == kEnum && len(c.enum) == 0 {
				c.kind = kOther
			}
		}
	}
	return rows.Err()
}

func (pgDialect) keys(ctx context.Context, db *sql.DB) ([]keyRow, error) {
	const q = `
SELECT cl.relname, c.contype = 'p', coalesce(fcl.relname, ''),
	array_to_string(array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
		JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i), ','),
	array_to_string(array(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY k(n, i)
		JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i), ',')
FROM pg_constraint c
JOIN pg_class cl ON cl.oid = c.conrelid
JOIN pg_namespace n ON n.oid = cl.relnamespace
LEFT JOIN pg_class fcl ON fcl.oid = c.confrelid
WHERE n.nspname = 'public' AND c.contype IN ('p', 'f')
UNION ALL
SELECT cl.relname, false, '',
	array_to_string(array(SELECT a.attname FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(n, o)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n ORDER BY k.o), ','), ''
FROM pg_index i
JOIN pg_class cl ON cl.oid = i.indrelid
JOIN pg_namespace n ON n.oid = cl.relnamespace
WHERE n.nspname = 'public' AND i.indisunique AND NOT i.indisprimary
ORDER BY 1, 2 DESC, 3, 4`
	return scanKeys(ctx, db, q)
}

func (d pgDialect) addColumn(table, col string) string {
	return fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s text", d.quote(table), d.quote(col))
}

type myDialect struct{}

func (myDialect) name() string           { return "mysql" }
func (myDialect) sqlDriver() string      { return "mysql" }
func (myDialect) quote(id string) string { return "`" + strings.ReplaceAll(id, "`", "``") + "`" }
func (d myDialect) text(col string) string {
	return "CAST(" + d.quote(col) + " AS CHAR)"
}

// str escapes for the session's NO_BACKSLASH_ESCAPES mode (see session).
func (myDialect) str(s string) string   { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
func (myDialect) bytes(b []byte) string { return "X'" + hex.EncodeToString(b) + "'" }

func (myDialect) session() []string {
	return []string{
		"SET SESSION innodb_lock_wait_timeout = 0",
		// READ COMMITTED takes no gap locks, so interleaved inserts do not
		// wait on each other's ranges.
		"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
		"SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')",
		"SET time_zone = '+00:00'",
		// A metadata lock wait (DDL behind a transaction that read the
		// table) fails as a lock wait too, which execBetween retries.
		"SET SESSION lock_wait_timeout = 5",
	}
}

func (myDialect) fuzzDSN(dsn string) string { return dsn }

func (myDialect) patient() string { return "SET SESSION innodb_lock_wait_timeout = 50" }

func (myDialect) isLockWait(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "Error 1205") || strings.Contains(err.Error(), "Error 1213"))
}

func (myDialect) columnsQuery() string {
	return `SELECT c.TABLE_NAME, c.COLUMN_NAME, LOWER(c.DATA_TYPE), LOWER(c.COLUMN_TYPE), c.IS_NULLABLE,
	c.CHARACTER_MAXIMUM_LENGTH, c.NUMERIC_PRECISION, c.NUMERIC_SCALE,
	c.COLUMN_DEFAULT IS NOT NULL OR c.EXTRA LIKE '%auto_increment%', c.EXTRA LIKE '%GENERATED%'
FROM information_schema.COLUMNS c
JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME
WHERE c.TABLE_SCHEMA = DATABASE() AND t.TABLE_TYPE = 'BASE TABLE'
ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION`
}

func (myDialect) readEnums(context.Context, *sql.DB, *schema) error { return nil }

func (myDialect) keys(ctx context.Context, db *sql.DB) ([]keyRow, error) {
	const q = `
SELECT TABLE_NAME, INDEX_NAME = 'PRIMARY', '', GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX SEPARATOR ','), ''
FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() AND NON_UNIQUE = 0
GROUP BY TABLE_NAME, INDEX_NAME
UNION ALL
SELECT TABLE_NAME, 0, REFERENCED_TABLE_NAME,
	GROUP_CONCAT(COLUMN_NAME ORDER BY ORDINAL_POSITION SEPARATOR ','),
	GROUP_CONCAT(REFERENCED_COLUMN_NAME ORDER BY ORDINAL_POSITION SEPARATOR ',')
FROM information_schema.KEY_COLUMN_USAGE
WHERE TABLE_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME IS NOT NULL
GROUP BY TABLE_NAME, CONSTRAINT_NAME, REFERENCED_TABLE_NAME
ORDER BY 1, 2 DESC, 3, 4`
	return scanKeys(ctx, db, q)
}

func (d myDialect) addColumn(table, col string) string {
	return fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s text NULL", d.quote(table), d.quote(col))
}

func scanKeys(ctx context.Context, db *sql.DB, q string) ([]keyRow, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []keyRow
	for rows.Next() {
		var k keyRow
		var cols, refCols string
		if err := rows.Scan(&k.table, &k.primary, &k.parent, &cols, &refCols); err != nil {
			return nil, err
		}
		k.cols = strings.Split(cols, ",")
		if refCols != "" {
			k.refCols = strings.Split(refCols, ",")
		}
		out = append(out, k)
	}
	return out, rows.Err()
}
