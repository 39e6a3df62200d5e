package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
)

// Alleycat scaled: races of four racers, one in ten an hour long (3,600
// readings a racer) and the rest five minutes (300): 2,520 readings a race
// on average.
const readingsPerRace = 4 * (9*300 + 3600) / 10

// generateAlleycat (re)creates database alleycat_<readings> with the
// Alleycat schema filled server-side, and returns its DSN.
func generateAlleycat(ctx context.Context, serverDSN string, readings int) (string, error) {
	races := (readings + readingsPerRace - 1) / readingsPerRace
	name := fmt.Sprintf("alleycat_%d", races*readingsPerRace)
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
		return dsn, nil
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
	script := fmt.Sprintf(`
CREATE TABLE classes (id integer PRIMARY KEY, name text NOT NULL, instructor text NOT NULL, difficulty text NOT NULL);
INSERT INTO classes SELECT c, 'Class ' || c, 'Coach ' || c, (ARRAY['easy','medium','hard'])[1 + c %% 3] FROM generate_series(1, 5) c;
CREATE TABLE racers (id integer PRIMARY KEY, name text NOT NULL, city text NOT NULL);
INSERT INTO racers SELECT r, 'Racer ' || r, 'City ' || (r %% 17) FROM generate_series(1, 100) r;
CREATE TABLE races (id integer PRIMARY KEY, class_id integer NOT NULL, started_at timestamptz NOT NULL, duration_seconds integer NOT NULL);
INSERT INTO races SELECT g, 1 + g %% 5, timestamptz '2024-01-01 00:00:00+00' + g * interval '1 hour',
  CASE WHEN g %% 10 = 0 THEN 3600 ELSE 300 END FROM generate_series(1, %d) g;
CREATE TABLE race_readings (race_id integer, racer_id integer, second integer, cadence integer, resistance integer, output integer,
  PRIMARY KEY (race_id, racer_id, second));
INSERT INTO race_readings SELECT r.id, (r.id * 4 + k) %% 100 + 1, s, 60 + (s * 7 + k) %% 50, 1 + (s + k) %% 18, 90 + (s * 13 + r.id + k) %% 340
  FROM races r, generate_series(0, 3) k, generate_series(1, r.duration_seconds) s;
CREATE TABLE race_results AS SELECT race_id, racer_id, SUM(output)::integer AS total_output, ROUND(AVG(cadence), 2) AS avg_cadence,
  timestamptz '2024-06-01 00:00:00+00' AS finished_at FROM race_readings GROUP BY race_id, racer_id;
ALTER TABLE race_results ADD PRIMARY KEY (race_id, racer_id);
ANALYZE;`, races)
	if _, err := conn.PgConn().Exec(ctx, script).ReadAll(); err != nil {
		return "", fmt.Errorf("generating %s: %w", name, err)
	}
	fmt.Printf("generated %s (%d races, %d readings) in %.1fs\n", name, races, races*readingsPerRace, time.Since(start).Seconds())
	return dsn, nil
}

// alleycatRun migrates the scaled Alleycat example into the no-op endpoint.
func alleycatRun(ctx context.Context, o options, work, dynafold, endpoint string) (*scenario, error) {
	dsn, err := generateAlleycat(ctx, o.pgDSN, o.alleycat)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(o.repo, "configs", "alleycat.yaml")
	table := "bench_alleycat"
	if err := createTable(ctx, dynafold, config, endpoint, table); err != nil {
		return nil, err
	}
	races := (o.alleycat + readingsPerRace - 1) / readingsPerRace
	sc, err := migrate(ctx, o, work, dynafold, config, endpoint, table, dsn,
		fmt.Sprintf("Alleycat → no-op (%s readings nested)", human(races*readingsPerRace)))
	if err != nil {
		return nil, err
	}
	sc.Note += fmt.Sprintf(", %.0f readings/s", float64(races*readingsPerRace)/sc.Seconds)
	return sc, nil
}
