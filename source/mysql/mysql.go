// Package mysql reads MySQL and MariaDB through go-sql-driver/mysql:
// information_schema introspection, keyset-paged reads on the primary key,
// and read-only consistent-snapshot transactions.
package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dynafold/dynafold/source"
)

// Options tune the connection pool.
type Options struct {
	MaxConns int
}

// Source is a MySQL or MariaDB database.
type Source struct {
	db      *sql.DB
	dsn     source.DSN
	mariadb bool
}

var _ source.Source = (*Source)(nil)

// Open connects. Sessions are read-only and in UTC; queries use the text
// protocol (client-side interpolation of bound values by the driver) so that
// every column arrives as exact text, whatever its type.
func Open(ctx context.Context, dsn source.DSN, opts Options) (*Source, error) {
	cfg, err := mysql.ParseDSN(dsn.Secret())
	if err != nil {
		return nil, fmt.Errorf("parsing MySQL DSN %s: invalid DSN", dsn)
	}
	cfg.InterpolateParams = true
	cfg.ParseTime = false
	cfg.Loc = time.UTC
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	if cfg.DBName == "" {
		return nil, fmt.Errorf("the MySQL DSN %s names no database", dsn)
	}
	// Probe which read-only session variable this server has: MySQL 8 and
	// MariaDB 11.1+ call it transaction_read_only, MariaDB 10 tx_read_only.
	probe, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", dsn, dsn.RedactError(err))
	}
	var version string
	if err := probe.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		probe.Close()
		return nil, fmt.Errorf("connecting to %s: %w", dsn, dsn.RedactError(err))
	}
	roVar := "transaction_read_only"
	var dummy any
	if err := probe.QueryRowContext(ctx, "SELECT @@session.transaction_read_only").Scan(&dummy); err != nil {
		roVar = "tx_read_only"
	}
	probe.Close()
	cfg.Params[roVar] = "1"
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", dsn, dsn.RedactError(err))
	}
	if opts.MaxConns > 0 {
		db.SetMaxOpenConns(opts.MaxConns)
		db.SetMaxIdleConns(opts.MaxConns)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to %s: %w", dsn, dsn.RedactError(err))
	}
	return &Source{db: db, dsn: dsn, mariadb: strings.Contains(strings.ToLower(version), "mariadb")}, nil
}

// Driver implements source.Source.
func (s *Source) Driver() string { return "mysql" }

// Close implements source.Source.
func (s *Source) Close() error { return s.db.Close() }

// Exec runs a statement outside any snapshot; tests use it to prove that
// sessions are read-only.
func (s *Source) Exec(ctx context.Context, stmt string) error {
	_, err := s.db.ExecContext(ctx, stmt)
	return s.dsn.RedactError(err)
}

// dialect quotes identifiers with backticks and binds with "?".
type dialect struct{}

func (dialect) Quote(ident string) string {
	return "`" + strings.ReplaceAll(ident, "`", "``") + "`"
}

func (dialect) Placeholder(int) string { return "?" }

// RowCompare is false: MySQL's optimizer does not always turn row-value
// comparisons into index range scans, so keysets are expanded.
func (dialect) RowCompare() bool { return false }

func (dialect) CastColumn(expr, cast string) string {
	switch cast {
	case source.CastWKT:
		return "ST_AsText(" + expr + ")"
	case source.CastGeoJSON:
		return "ST_AsGeoJSON(" + expr + ")"
	}
	return "CAST(" + expr + " AS " + cast + ")"
}

// Dialect returns MySQL's quoting and binding rules.
func Dialect() source.Dialect { return dialect{} }
