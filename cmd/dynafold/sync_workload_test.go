package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
)

// A workload is a seeded random stream of source transactions for one
// design, valid against the schema's keys and foreign keys: inserts,
// updates and deletes of every table, parent attribute changes, children
// moved to another parent, primary-key changes, rows entering and leaving
// a where: filter, nested children added and removed. It keeps a model of
// the keys so that every statement it writes succeeds, and writes SQL that
// PostgreSQL and MariaDB both run.
type workload interface {
	// next returns one transaction's statements.
	next(rng *rand.Rand) []string
}

// newWorkload builds the design's workload from the source's current keys.
func newWorkload(t *testing.T, driver, dsn, design string) workload {
	t.Helper()
	q := func(sql string) [][]string { return queryRows(t, driver, dsn, sql) }
	switch design {
	case "portfolios":
		return newPortfolioWork(q)
	case "telemetryhub":
		return newTelemetryWork(q)
	case "photos":
		return newPhotoWork(q)
	case "alleycat":
		return newAlleycatWork(q)
	}
	t.Fatalf("no workload for %s", design)
	return nil
}

// runWorkload commits n transactions of w, one at a time.
func runWorkload(t *testing.T, driver, dsn string, w workload, rng *rand.Rand, n int) {
	t.Helper()
	ctx := context.Background()
	s, err := testenv.OpenSession(ctx, driver, dsn)
	require.NoError(t, err)
	defer s.Close()
	if driver == "mysql" {
		require.NoError(t, s.Exec(ctx, ansiQuotes))
	}
	for i := 0; i < n; i++ {
		stmts := w.next(rng)
		script := "START TRANSACTION;\n" + strings.Join(stmts, ";\n") + ";\nCOMMIT;"
		require.NoError(t, s.Exec(ctx, script), "transaction %d:\n%s", i, script)
	}
}

func execScript(driver, dsn, script string) error {
	if driver == "mysql" {
		// Double-quoted identifiers, as in PostgreSQL ("databases" is a
		// reserved word in MariaDB).
		script = ansiQuotes + script
	}
	return testenv.Exec(context.Background(), driver, dsn, script)
}

// queryRows returns every row of a query as text.
func queryRows(t *testing.T, driver, dsn, query string) [][]string {
	t.Helper()
	var out [][]string
	switch driver {
	case "postgres":
		conn, err := pgx.Connect(context.Background(), dsn)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		rows, err := conn.Query(context.Background(), query)
		require.NoError(t, err)
		for rows.Next() {
			vals, err := rows.Values()
			require.NoError(t, err)
			row := make([]string, len(vals))
			for i, v := range vals {
				row[i] = fmt.Sprint(v)
			}
			out = append(out, row)
		}
		require.NoError(t, rows.Err())
	case "mysql":
		cfg, err := mysql.ParseDSN(dsn)
		require.NoError(t, err)
		cfg.MultiStatements = true
		db, err := sql.Open("mysql", cfg.FormatDSN())
		require.NoError(t, err)
		defer db.Close()
		conn, err := db.Conn(context.Background())
		require.NoError(t, err)
		defer conn.Close()
		_, err = conn.ExecContext(context.Background(), ansiQuotes)
		require.NoError(t, err)
		rows, err := conn.QueryContext(context.Background(), query)
		require.NoError(t, err)
		cols, _ := rows.Columns()
		for rows.Next() {
			raw := make([]sql.RawBytes, len(cols))
			ptrs := make([]any, len(cols))
			for i := range raw {
				ptrs[i] = &raw[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			row := make([]string, len(cols))
			for i, r := range raw {
				row[i] = string(r)
			}
			out = append(out, row)
		}
		require.NoError(t, rows.Err())
	}
	return out
}

// ansiQuotes makes a MariaDB session read double quotes as identifier
// quotes, so that one workload's SQL runs on both databases.
const ansiQuotes = "SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES');\n"

func lit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func pick[T any](rng *rand.Rand, s []T) T { return s[rng.IntN(len(s))] }

func remove[T comparable](s []T, v T) []T {
	if i := slices.Index(s, v); i >= 0 {
		return slices.Delete(s, i, i+1)
	}
	return s
}

func ts(rng *rand.Rand) string {
	return fmt.Sprintf("'2024-%02d-%02d %02d:%02d:%02d'", 1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60))
}

// portfolioWork: portfolios own servers own databases.
type portfolioWork struct {
	portfolios []int
	servers    map[string]int    // server -> portfolio
	dbs        map[string]string // database -> server
	nextID     int
}

func newPortfolioWork(q func(string) [][]string) *portfolioWork {
	w := &portfolioWork{servers: map[string]int{}, dbs: map[string]string{}, nextID: 1000}
	for _, r := range q("SELECT id FROM portfolios ORDER BY id") {
		var id int
		fmt.Sscan(r[0], &id)
		w.portfolios = append(w.portfolios, id)
	}
	for _, r := range q("SELECT id, portfolio_id FROM servers ORDER BY id") {
		var p int
		fmt.Sscan(r[1], &p)
		w.servers[r[0]] = p
	}
	for _, r := range q(`SELECT id, server_id FROM "databases" ORDER BY id`) {
		w.dbs[r[0]] = r[1]
	}
	return w
}

func (w *portfolioWork) id() int { w.nextID++; return w.nextID }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (w *portfolioWork) next(rng *rand.Rand) []string {
	var out []string
	for n := 1 + rng.IntN(3); n > 0; n-- {
		servers, dbs := sortedKeys(w.servers), sortedKeys(w.dbs)
		switch op := rng.IntN(11); {
		case op == 0 || len(w.portfolios) < 2:
			id := w.id()
			w.portfolios = append(w.portfolios, id)
			out = append(out, fmt.Sprintf("INSERT INTO portfolios (id, name) VALUES (%d, 'Portfolio %d')", id, id))
		case op == 1: // a parent attribute copied into every item of its collection
			out = append(out, fmt.Sprintf("UPDATE portfolios SET name = 'Renamed %d' WHERE id = %d", w.id(), pick(rng, w.portfolios)))
		case op == 2 || len(servers) < 3:
			id := fmt.Sprintf("Server%d", w.id())
			p := pick(rng, w.portfolios)
			w.servers[id] = p
			out = append(out, fmt.Sprintf("INSERT INTO servers (id, portfolio_id) VALUES (%s, %d)", lit(id), p))
		case op == 3: // a server and its databases move to another portfolio
			s := pick(rng, servers)
			p := pick(rng, w.portfolios)
			w.servers[s] = p
			out = append(out, fmt.Sprintf("UPDATE servers SET portfolio_id = %d WHERE id = %s", p, lit(s)))
		case op == 4 || len(dbs) < 3:
			id := fmt.Sprintf("DB%d", w.id())
			s := pick(rng, servers)
			w.dbs[id] = s
			out = append(out, fmt.Sprintf(`INSERT INTO "databases" (id, server_id) VALUES (%s, %s)`, lit(id), lit(s)))
		case op == 5: // a child moves to another parent
			d, s := pick(rng, dbs), pick(rng, servers)
			w.dbs[d] = s
			out = append(out, fmt.Sprintf(`UPDATE "databases" SET server_id = %s WHERE id = %s`, lit(s), lit(d)))
		case op == 6: // primary-key change
			d := pick(rng, dbs)
			id := fmt.Sprintf("DB%d", w.id())
			w.dbs[id] = w.dbs[d]
			delete(w.dbs, d)
			out = append(out, fmt.Sprintf(`UPDATE "databases" SET id = %s WHERE id = %s`, lit(id), lit(d)))
		case op == 7:
			d := pick(rng, dbs)
			delete(w.dbs, d)
			out = append(out, fmt.Sprintf(`DELETE FROM "databases" WHERE id = %s`, lit(d)))
		case op == 8: // a server's key changes: its databases follow it
			s := pick(rng, servers)
			id := fmt.Sprintf("Server%d", w.id())
			w.servers[id] = w.servers[s]
			out = append(out, fmt.Sprintf("INSERT INTO servers (id, portfolio_id) VALUES (%s, %d)", lit(id), w.servers[s]))
			out = append(out, fmt.Sprintf(`UPDATE "databases" SET server_id = %s WHERE server_id = %s`, lit(id), lit(s)))
			for d, ds := range w.dbs {
				if ds == s {
					w.dbs[d] = id
				}
			}
			delete(w.servers, s)
			out = append(out, fmt.Sprintf("DELETE FROM servers WHERE id = %s", lit(s)))
		case op == 9: // a server deleted with its databases
			s := pick(rng, servers)
			out = append(out, fmt.Sprintf(`DELETE FROM "databases" WHERE server_id = %s`, lit(s)))
			for d, ds := range w.dbs {
				if ds == s {
					delete(w.dbs, d)
				}
			}
			delete(w.servers, s)
			out = append(out, fmt.Sprintf("DELETE FROM servers WHERE id = %s", lit(s)))
		default: // an empty portfolio deleted
			used := map[int]bool{}
			for _, p := range w.servers {
				used[p] = true
			}
			for _, p := range w.portfolios {
				if !used[p] {
					w.portfolios = remove(w.portfolios, p)
					out = append(out, fmt.Sprintf("DELETE FROM portfolios WHERE id = %d", p))
					break
				}
			}
			if len(out) == 0 {
				out = append(out, fmt.Sprintf("UPDATE portfolios SET name = 'Renamed %d' WHERE id = %d", w.id(), pick(rng, w.portfolios)))
			}
		}
	}
	return out
}
