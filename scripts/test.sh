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

STATE="${DYNAFOLD_SERVICES_DIR:-$REPO/.services}"
mkdir -p "$STATE"
# Several test runs may share the services (a developer's loops, parallel
# sessions): a count of users under a lock makes only the last run out
# stop them, and only if a run of this group started them.
exec 9>"$STATE/test.lock"
flock 9
users=$(cat "$STATE/test.users" 2>/dev/null || echo 0)
if [ "$users" -le 0 ] && ! bash scripts/services.sh status >/dev/null 2>&1; then
	echo 1 >"$STATE/test.started"
elif [ "$users" -le 0 ]; then
	echo 0 >"$STATE/test.started"
fi
echo $((users + 1)) >"$STATE/test.users"
bash scripts/services.sh start >/dev/null
flock -u 9
leave() {
	flock 9
	local n
	n=$(($(cat "$STATE/test.users") - 1))
	echo "$n" >"$STATE/test.users"
	if [ "$n" -le 0 ] && [ "$(cat "$STATE/test.started" 2>/dev/null)" = 1 ] && [ "${DYNAFOLD_KEEP_SERVICES:-0}" != 1 ]; then
		bash scripts/services.sh stop >/dev/null 2>&1 || true
	fi
	flock -u 9
}
trap leave EXIT
# shellcheck disable=SC1091
source "$STATE/env"
export DYNAFOLD_INTEGRATION=1

if [ "$#" -eq 0 ]; then
	# ./testdata/gen is named explicitly: go excludes testdata from ./... .
	set -- ./... ./testdata/gen/
fi
go test -race -count=1 -timeout 75m "$@"
