#!/usr/bin/env bash
# Runs the services script from a copy of the repository inside a private
# (0700) directory, the way `make demo` and `make test` run from /root/… or
# a mktemp -d directory: PostgreSQL (run by another user when we are root),
# MariaDB, dynalite, moto and s3rver must start and answer, and `make services-stop` must
# stop them all. CI runs it after `make test` (see .ci/run).
#
# Ports: DYNAFOLD_PRIVATE_PG_PORT (25442), DYNAFOLD_PRIVATE_MYSQL_PORT (23316),
# DYNAFOLD_PRIVATE_DYNAMODB_PORT (28010), DYNAFOLD_PRIVATE_MOTO_PORT (28110),
# DYNAFOLD_PRIVATE_S3_PORT (29010),
# apart from the usual services' and below Linux's ephemeral range
# (32768-60999): CI runs this beside the test suite, whose servers and
# connections take ports from that range (one held 58010 once, when
# dynalite here was to listen on it).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "test-private-dir: $*" >&2; }
fail() { echo "test-private-dir: FAIL: $*" >&2; exit 1; }

PRIV="$(mktemp -d)"
chmod 700 "$PRIV"
COPY="$PRIV/dynafold"
export DYNAFOLD_PG_PORT="${DYNAFOLD_PRIVATE_PG_PORT:-25442}"
export DYNAFOLD_MYSQL_PORT="${DYNAFOLD_PRIVATE_MYSQL_PORT:-23316}"
export DYNAFOLD_DYNAMODB_PORT="${DYNAFOLD_PRIVATE_DYNAMODB_PORT:-28010}"
export DYNAFOLD_MOTO_PORT="${DYNAFOLD_PRIVATE_MOTO_PORT:-28110}"
export DYNAFOLD_S3_PORT="${DYNAFOLD_PRIVATE_S3_PORT:-29010}"
unset DYNAFOLD_SERVICES_DIR # the default: <copy>/.services, inside the private directory

cleanup() {
	local pgdir=""
	[ -f "$COPY/.services/pg.dir" ] && pgdir="$(dirname "$(cat "$COPY/.services/pg.dir")")"
	(cd "$COPY" && bash scripts/services.sh stop >/dev/null 2>&1) || true
	rm -rf "$PRIV"
	[ -n "$pgdir" ] && rm -rf "$pgdir"
	return 0
}
trap cleanup EXIT

log "copying the repository to $COPY (in a 0700 directory)"
mkdir -p "$COPY"
(cd "$REPO" && git ls-files -z | xargs -0 cp --parents -t "$COPY")
# dynalite from the repository's node_modules when installed (no network).
[ -d "$REPO/node_modules" ] && ln -s "$REPO/node_modules" "$COPY/node_modules"

(cd "$COPY" && make services >/dev/null) || fail "make services failed in a private directory"
# shellcheck disable=SC1091
source "$COPY/.services/env"

(cd "$COPY" && bash scripts/services.sh status) || fail "a service is not up"
bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r | head -n 1)"
"${bin:+$bin/}psql" "$DYNAFOLD_TEST_PG_DSN" -tAc 'SELECT 1' | grep -qx 1 || fail "PostgreSQL does not answer"
mariadb -h 127.0.0.1 -P "$DYNAFOLD_MYSQL_PORT" -u dynafold -pdynafold -N -e 'SELECT 1' | grep -qx 1 || fail "MariaDB does not answer"
# moto answers any well-formed signature; ListTables is its cheapest call.
curl -sf -X POST "$DYNAFOLD_TEST_MOTO_ENDPOINT/" -H 'Content-Type: application/x-amz-json-1.0' \
	-H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
	-H 'Authorization: AWS4-HMAC-SHA256 Credential=dynafold/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
	-d '{}' | grep -q TableNames || fail "moto does not answer"
if [ "$(id -u)" = 0 ]; then
	[ -f "$COPY/.services/pg.dir" ] || fail "as root in a private directory, PostgreSQL's data directory should be outside it, with a pointer in .services/pg.dir"
	case "$(cat "$COPY/.services/pg.dir")" in
	"$PRIV"/*) fail "PostgreSQL's data directory is inside the private directory" ;;
	esac
	log "PostgreSQL's data directory: $(cat "$COPY/.services/pg.dir")"
fi

(cd "$COPY" && make services-stop >/dev/null) || fail "make services-stop failed"
if (cd "$COPY" && bash scripts/services.sh status >/dev/null 2>&1); then fail "services still up after make services-stop"; fi
for port in "$DYNAFOLD_PG_PORT" "$DYNAFOLD_MYSQL_PORT" "$DYNAFOLD_DYNAMODB_PORT" "$DYNAFOLD_MOTO_PORT" "$DYNAFOLD_S3_PORT"; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then fail "port $port still answers after make services-stop"; fi
done
log "ok: services start, answer and stop from a private directory"
