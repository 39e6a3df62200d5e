#!/usr/bin/env bash
# The demo (`make demo`): starts local PostgreSQL, MariaDB and dynalite if
# needed, loads the portfolio example into both databases, creates the
# DynamoDB table, migrates from PostgreSQL, prints the items and runs the
# design's three queries, then migrates the same tables from MariaDB into a
# second table and shows that both tables hold the same items.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

if [ -t 1 ]; then
	say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
	say() { printf '\n== %s\n' "$*"; }
fi

bash scripts/services.sh start >/dev/null
# shellcheck disable=SC1091
source "${DYNAFOLD_SERVICES_DIR:-$REPO/.services}/env"
mkdir -p bin
go build -o bin/dynafold ./cmd/dynafold
dynafold=bin/dynafold
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

say "Loading the portfolio example into PostgreSQL and MariaDB"
pg_server="${DYNAFOLD_TEST_PG_DSN%%\?*}"
pg_dsn="${pg_server%/*}/dynafold_demo?sslmode=disable"
go run ./internal/testenv/loadsql postgres "$DYNAFOLD_TEST_PG_DSN" dynafold_demo testdata/portfolios/postgres.sql
my_dsn="${DYNAFOLD_TEST_MYSQL_DSN%/}/dynafold_demo"
go run ./internal/testenv/loadsql mysql "$DYNAFOLD_TEST_MYSQL_DSN" dynafold_demo testdata/portfolios/mysql.sql
echo "portfolios, servers, databases: 2 + 4 + 4 rows in each"

common=(--config configs/portfolios.yaml --endpoint "$DYNAFOLD_TEST_DYNAMODB_ENDPOINT")

say "dynafold table create"
"$dynafold" table create "${common[@]}" --table portfolios-demo --source-dsn "$pg_dsn"

say "dynafold migrate (from PostgreSQL)"
"$dynafold" migrate "${common[@]}" --table portfolios-demo --source-dsn "$pg_dsn" \
	--checkpoint "$work/pg.checkpoint.json" --progress none

say "The items (dynafold dump)"
"$dynafold" dump "${common[@]}" --table portfolios-demo | tee "$work/pg.items"

say "The design's queries (dynafold patterns)"
"$dynafold" patterns "${common[@]}" --table portfolios-demo

say "The same migration from MariaDB"
"$dynafold" table create "${common[@]}" --table portfolios-demo-mysql --source-dsn "$my_dsn" >/dev/null
"$dynafold" migrate "${common[@]}" --table portfolios-demo-mysql --source-dsn "$my_dsn" \
	--checkpoint "$work/mysql.checkpoint.json" --progress none
"$dynafold" dump "${common[@]}" --table portfolios-demo-mysql >"$work/mysql.items"
if cmp -s "$work/pg.items" "$work/mysql.items"; then
	echo "portfolios-demo (from PostgreSQL) and portfolios-demo-mysql (from MariaDB) hold the same $(wc -l <"$work/pg.items") items."
else
	echo "the two tables differ:" >&2
	diff "$work/pg.items" "$work/mysql.items" >&2
	exit 1
fi

say "The design as a page (dynafold design html)"
# Kept after the demo (bin/ is not tracked): open it in a browser.
page="$PWD/bin/portfolios-design.html"
"$dynafold" design html --config configs/portfolios.yaml --source-dsn "$pg_dsn" --out "$page"
echo "open $page"
