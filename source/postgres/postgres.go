// Package postgres reads PostgreSQL through pgx/v5: catalog introspection,
// keyset-paged reads on the primary key, and one exported snapshot shared by
// every reader of a run.
package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dynafold/dynafold/source"
)

// Options tune the connection pool.
type Options struct {
	// MaxConns bounds the pool; readers plus a few for the snapshot holder
	// and metadata queries.
	MaxConns int
}

// Source is a PostgreSQL database.
type Source struct {
	pool *pgxpool.Pool
	dsn  source.DSN
}

var _ source.Source = (*Source)(nil)

// Open connects. Every session is read-only (default_transaction_read_only),
// so even a mapping's query: cannot write to the source.
func Open(ctx context.Context, dsn source.DSN, opts Options) (*Source, error) {
	cfg, err := pgxpool.ParseConfig(dsn.Secret())
	if err != nil {
		return nil, fmt.Errorf("parsing PostgreSQL DSN %s: %w", dsn, dsn.RedactError(err))
	}
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	cfg.ConnConfig.RuntimeParams["application_name"] = "dynafold"
	// Timestamps without a zone are read as UTC wall-clock values; the
	// session zone must not shift timestamptz text either.
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	if opts.MaxConns > 0 {
		cfg.MaxConns = int32(opts.MaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", dsn, dsn.RedactError(err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to %s: %w", dsn, dsn.RedactError(err))
	}
	return &Source{pool: pool, dsn: dsn}, nil
}

// Driver implements source.Source.
func (s *Source) Driver() string { return "postgres" }

// Close implements source.Source.
func (s *Source) Close() error {
	s.pool.Close()
	return nil
}

// Exec runs a statement outside any snapshot; tests use it to prove that
// sessions are read-only.
func (s *Source) Exec(ctx context.Context, sql string) error {
	_, err := s.pool.Exec(ctx, sql)
	return s.dsn.RedactError(err)
}

// dialect quotes identifiers with double quotes and binds $n.
type dialect struct{}

func (dialect) Quote(ident string) string {
	return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"`
}

func (dialect) Placeholder(n int) string { return "$" + strconv.Itoa(n) }

// RowCompare is true: PostgreSQL uses a btree index for (a, b) > ($1, $2).
func (dialect) RowCompare() bool { return true }

func (dialect) CastColumn(expr, cast string) string { return expr + "::" + cast }

// Dialect returns PostgreSQL's quoting and binding rules.
func Dialect() source.Dialect { return dialect{} }
