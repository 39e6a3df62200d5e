#!/usr/bin/env bash
# The project's test command (`make test`): starts PostgreSQL, MariaDB and
# dynalite when they are not running (installing what is missing), runs the
# whole suite with the race detector and DYNAFOLD_INTEGRATION=1, so that a
# missing service fails the run instead of skipping tests, and stops the
# services it started. Arguments replace the default `./...`.
#
#   scripts/test.sh                      # everything
#   scripts/test.sh -run TestMigrate ./cmd/...
#   DYNAFOLD_KEEP_SERVICES=1 scripts/test.sh   # leave services running
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

started=0
if ! bash scripts/services.sh status >/dev/null 2>&1; then
	started=1
fi
bash scripts/services.sh start >/dev/null
if [ "$started" = 1 ] && [ "${DYNAFOLD_KEEP_SERVICES:-0}" != 1 ]; then
	trap 'bash scripts/services.sh stop >/dev/null 2>&1 || true' EXIT
fi
# shellcheck disable=SC1091
source "${DYNAFOLD_SERVICES_DIR:-$REPO/.services}/env"
export DYNAFOLD_INTEGRATION=1

if [ "$#" -eq 0 ]; then
	# ./testdata/gen is named explicitly: go excludes testdata from ./... .
	set -- ./... ./testdata/gen/
fi
go test -race -count=1 -timeout 30m "$@"
