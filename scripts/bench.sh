#!/usr/bin/env bash
# The benchmark (`make bench`): starts the local services if needed, builds
# dynafold, the no-op endpoint and the benchmark driver, and runs every
# scenario, then the live-sync scenarios (`dynafold-bench sync`) and the
# continuous shadow comparison (`dynafold-bench shadow`). Arguments go to
# `dynafold-bench run`, e.g.
#   scripts/bench.sh --sizes 1000000 --dynalite-items 100000
#   scripts/bench.sh --scenarios incremental --incremental-items 100000
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
# shellcheck source=scripts/bench-tools.sh
source scripts/bench-tools.sh
bin/dynafold-bench run --bin bin --repo . --pg-dsn "$DYNAFOLD_TEST_PG_DSN" "$@"
# A selection of scenarios (e.g. --scenarios incremental) leaves out the
# live-sync runs, which are not among them.
for arg in "$@"; do
	case "$arg" in --scenarios | --scenarios=*) exit 0 ;; esac
done
# Live sync: apply rate and lag, from PostgreSQL and from MariaDB; the
# single-row and fan-out rates also with the state in DynamoDB (dynalite,
# --state-endpoint) against local files (docs/sync-state.md).
bin/dynafold-bench sync --bin bin --repo . --pg-dsn "$DYNAFOLD_TEST_PG_DSN" --mysql-dsn "$DYNAFOLD_TEST_MYSQL_DSN" --state-dynamo
# The continuous shadow comparison (docs/shadow.md): sync of the portfolio
# design into dynalite at 1,000 changes/s, without and with
# --shadow-patterns: comparisons a minute, mismatches (false positives:
# it exits non-zero on any), sync's apply rate and lag.
bin/dynafold-bench shadow --bin bin --repo . --pg-dsn "$DYNAFOLD_TEST_PG_DSN" --mysql-dsn "$DYNAFOLD_TEST_MYSQL_DSN" --endpoint "$DYNAFOLD_TEST_DYNAMODB_ENDPOINT"
