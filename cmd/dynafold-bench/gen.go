package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
)

// itemsPerPortfolio: one portfolio item, three servers, six databases.
const itemsPerPortfolio = 10

func genCommand() *cobra.Command {
	var dsn string
	var items int
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Create a database with a portfolio-shaped dataset of N items",
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := generate(cmd.Context(), dsn, items)
			if err != nil {
				return err
			}
			fmt.Println(db)
			return nil
		},
	}
	cmd.Flags().StringVar(&dsn, "pg-dsn", "", "PostgreSQL server DSN (any database)")
	cmd.Flags().IntVar(&items, "items", 1_000_000, "items the dataset produces (multiple of 10)")
	return cmd
}

// generate (re)creates database bench_<items> with the portfolio tables,
// filled server-side with generate_series, and returns its DSN. An existing
// database of the same size is reused.
func generate(ctx context.Context, serverDSN string, items int) (string, error) {
	portfolios := items / itemsPerPortfolio
	return generateDatabase(ctx, serverDSN, fmt.Sprintf("bench_%d", portfolios*itemsPerPortfolio), portfolios, fmt.Sprintf(`
CREATE TABLE portfolios (id integer PRIMARY KEY, name text NOT NULL);
CREATE TABLE servers (id varchar(64) PRIMARY KEY, portfolio_id integer NOT NULL REFERENCES portfolios (id));
CREATE TABLE databases (id varchar(64) PRIMARY KEY, server_id varchar(64) NOT NULL REFERENCES servers (id));
INSERT INTO portfolios SELECT p, 'Portfolio ' || p FROM generate_series(1, %[1]d) p;
INSERT INTO servers SELECT 'Srv' || p || 'n' || s, p FROM generate_series(1, %[1]d) p, generate_series(1, 3) s;
INSERT INTO databases SELECT 'Db' || p || 'n' || s || 'd' || d, 'Srv' || p || 'n' || s
  FROM generate_series(1, %[1]d) p, generate_series(1, 3) s, generate_series(1, 2) d;
CREATE INDEX ON servers (portfolio_id);
CREATE INDEX ON databases (server_id);
ANALYZE;`, portfolios))
}

// generateDatabase (re)creates database name on the server of serverDSN by
// running script in it, and returns its DSN. A database of that name that
// already holds the given number of portfolios is reused as it is.
func generateDatabase(ctx context.Context, serverDSN, name string, portfolios int, script string) (string, error) {
	u, err := url.Parse(serverDSN)
	if err != nil {
		return "", err
	}
	admin, err := pgx.Connect(ctx, serverDSN)
	if err != nil {
		return "", err
	}
	defer admin.Close(ctx)
	u.Path = "/" + name
	dsn := u.String()
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		if n, err := countPortfolios(ctx, dsn); err == nil && n == portfolios {
			return dsn, nil
		}
		if _, err := admin.Exec(ctx, `DROP DATABASE "`+name+`" WITH (FORCE)`); err != nil {
			return "", err
		}
	}
	if _, err := admin.Exec(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	start := time.Now()
	if _, err := conn.PgConn().Exec(ctx, script).ReadAll(); err != nil {
		return "", fmt.Errorf("generating %s: %w", name, err)
	}
	fmt.Printf("generated %s (%d items) in %.1fs\n", name, portfolios*itemsPerPortfolio, time.Since(start).Seconds())
	return dsn, nil
}

func countPortfolios(ctx context.Context, dsn string) (int, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM portfolios").Scan(&n)
	return n, err
}
