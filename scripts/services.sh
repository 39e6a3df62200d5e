#!/usr/bin/env bash
# Local services for dynafold's tests, demo and benchmarks: PostgreSQL 15 in
# a temporary data directory, MariaDB, dynalite (a DynamoDB-compatible
# server), moto's server (a second DynamoDB-compatible server, for what
# dynalite lacks: streams, transactions, multi-attribute GSI keys) and
# s3rver (an S3-compatible server, for export), all on loopback. Installs
# what is missing (Debian packages, the npm-pinned dynalite and s3rver,
# moto from pip), starts only what is not already running, and writes the
# connection settings to $STATE/env.
#
#   scripts/services.sh start | stop | status | env
#
# Settings: DYNAFOLD_SERVICES_DIR (default <repo>/.services),
# DYNAFOLD_PG_PORT (55432), DYNAFOLD_MYSQL_PORT (53306),
# DYNAFOLD_DYNAMODB_PORT (58000), DYNAFOLD_MOTO_PORT (58100),
# DYNAFOLD_S3_PORT (59000). When run as root from a directory the
# PostgreSQL user cannot reach, PostgreSQL's data directory goes under
# DYNAFOLD_PG_STATE_BASE (/var/tmp) instead; $STATE/pg.dir points to it.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${DYNAFOLD_SERVICES_DIR:-$REPO/.services}"
case "$STATE" in /*) ;; *) STATE="$PWD/$STATE" ;; esac
PG_PORT="${DYNAFOLD_PG_PORT:-55432}"
MY_PORT="${DYNAFOLD_MYSQL_PORT:-53306}"
DDB_PORT="${DYNAFOLD_DYNAMODB_PORT:-58000}"
MOTO_PORT="${DYNAFOLD_MOTO_PORT:-58100}"
S3_PORT="${DYNAFOLD_S3_PORT:-59000}"

log() { echo "services: $*" >&2; }
die() { echo "services: $*" >&2; exit 1; }
is_root() { [ "$(id -u)" = 0 ]; }

apt_install() {
	is_root || die "missing $1 and not root: install the Debian package '$1' (sudo apt-get install -y $1)"
	log "installing $1 from Debian"
	export DEBIAN_FRONTEND=noninteractive
	# A fresh machine needs the package lists; a stale one is refreshed once.
	apt-get update -qq >/dev/null
	apt-get install -y -qq "$1" >/dev/null
}

pg_bindir() {
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		[ -x "$d/initdb" ] && { echo "$d"; return; }
	done
	command -v initdb >/dev/null && dirname "$(readlink -f "$(command -v initdb)")"
}

# PostgreSQL refuses to run as root: use the postgres user, or create one.
pg_user() {
	if ! is_root; then id -un; return; fi
	if id postgres >/dev/null 2>&1; then echo postgres; return; fi
	if ! id dynafold-pg >/dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin dynafold-pg
	fi
	echo dynafold-pg
}

# PostgreSQL's data directory must be reachable by the user it runs as.
# That is $STATE/pg, unless the checkout sits in a directory that user
# cannot traverse (/root/…, a mktemp -d directory): then it lives in a
# directory of its own outside the checkout, owned by that user, and
# $STATE/pg.dir points to it (start and stop both follow the pointer).
pg_dir() {
	if [ -f "$STATE/pg.dir" ]; then cat "$STATE/pg.dir"; else echo "$STATE/pg"; fi
}
pg_log() { echo "$(dirname "$(pg_dir)")/pg.log"; }

choose_pg_dir() { # choose_pg_dir USER
	local user="$1" base
	if [ -f "$STATE/pg.dir" ]; then
		[ -d "$(dirname "$(pg_dir)")" ] && return
		rm -f "$STATE/pg.dir" # its directory was removed (a cleaned /var/tmp)
	fi
	if ! is_root || runuser -u "$user" -- test -x "$STATE" 2>/dev/null; then return; fi
	base="$(mktemp -d "${DYNAFOLD_PG_STATE_BASE:-/var/tmp}/dynafold-pg.XXXXXX")"
	chown "$user" "$base"
	chmod 700 "$base"
	echo "$base/pg" >"$STATE/pg.dir"
	log "$STATE is not reachable by the $user user: PostgreSQL's data directory is $base/pg (see $STATE/pg.dir)"
}

as_pg() {
	local user="$1"; shift
	# From /: the current directory may be one the user cannot enter.
	if is_root; then (cd / && runuser -u "$user" -- "$@"); else "$@"; fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() { # wait_for NAME SECONDS LOG COMMAND...
	local name="$1" secs="$2" logf="$3"; shift 3
	local i
	for ((i = 0; i < secs * 5; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	log "$name did not become ready in ${secs}s; last lines of $logf:"
	tail -n 30 "$logf" >&2 || true
	exit 1
}

start_postgres() {
	local bin user pgd
	bin="$(pg_bindir || true)"
	if [ -z "$bin" ]; then apt_install postgresql; bin="$(pg_bindir)"; fi
	user="$(pg_user)"
	choose_pg_dir "$user"
	pgd="$(pg_dir)"
	if [ -f "$pgd/postmaster.pid" ] && as_pg "$user" "$bin/pg_ctl" -D "$pgd" status >/dev/null 2>&1; then
		log "PostgreSQL already running on $PG_PORT"
		return
	fi
	if [ ! -f "$pgd/PG_VERSION" ]; then
		rm -rf "$pgd"
		mkdir -p "$pgd"
		chown "$user" "$pgd" 2>/dev/null || true
		# Trust on loopback: the DSN's password is accepted and ignored.
		as_pg "$user" "$bin/initdb" -D "$pgd" -U dynafold --auth=trust -E UTF8 --locale=C.UTF-8 >"$STATE/pg-initdb.log" 2>&1 ||
			{ tail -n 20 "$STATE/pg-initdb.log" >&2; die "initdb failed"; }
	fi
	touch "$(pg_log)" && chown "$user" "$(pg_log)" 2>/dev/null || true
	# fsync and friends are off: these are throwaway test databases.
	as_pg "$user" "$bin/pg_ctl" -D "$pgd" -l "$(pg_log)" -w -t 60 start -o \
		"-p $PG_PORT -k $pgd -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c shared_buffers=256MB -c wal_level=logical -c max_replication_slots=64 -c max_wal_senders=64" >/dev/null ||
		{ tail -n 30 "$(pg_log)" >&2; die "PostgreSQL did not start"; }
	log "PostgreSQL started on 127.0.0.1:$PG_PORT"
}

start_mariadb() {
	command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || apt_install mariadb-server
	local mariadbd="${MARIADBD:-$(command -v mariadbd || echo /usr/sbin/mariadbd)}"
	local sock="$STATE/mysql.sock" pidf="$STATE/mysql.pid" me
	me="$(id -un)"
	if [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null && mariadb-admin -S "$sock" -u "$me" ping >/dev/null 2>&1; then
		log "MariaDB already running on $MY_PORT"
		return
	fi
	if [ ! -d "$STATE/mysql/mysql" ]; then
		rm -rf "$STATE/mysql"
		mariadb-install-db --datadir="$STATE/mysql" --user="$me" --skip-test-db --auth-root-authentication-method=socket \
			>"$STATE/mysql-install.log" 2>&1 || { tail -n 20 "$STATE/mysql-install.log" >&2; die "mariadb-install-db failed"; }
	fi
	nohup "$mariadbd" --no-defaults --datadir="$STATE/mysql" --user="$me" --port="$MY_PORT" --bind-address=127.0.0.1 \
		--socket="$sock" --pid-file="$pidf" --skip-name-resolve --max-connections=400 \
		--innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=2 --innodb-doublewrite=0 \
		--character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
		--log-bin=binlog --binlog-format=ROW --binlog-row-image=FULL --server-id=1 --log-bin-trust-function-creators=1 \
		--log-error="$STATE/mysql.log" >/dev/null 2>&1 &
	wait_for MariaDB 60 "$STATE/mysql.log" mariadb-admin -S "$sock" -u "$me" ping
	mariadb -S "$sock" -u "$me" <<-'SQL'
		CREATE USER IF NOT EXISTS 'dynafold'@'%' IDENTIFIED BY 'dynafold';
		CREATE USER IF NOT EXISTS 'dynafold'@'localhost' IDENTIFIED BY 'dynafold';
		CREATE USER IF NOT EXISTS 'dynafold'@'127.0.0.1' IDENTIFIED BY 'dynafold';
		GRANT ALL PRIVILEGES ON *.* TO 'dynafold'@'%' WITH GRANT OPTION;
		GRANT ALL PRIVILEGES ON *.* TO 'dynafold'@'localhost' WITH GRANT OPTION;
		GRANT ALL PRIVILEGES ON *.* TO 'dynafold'@'127.0.0.1' WITH GRANT OPTION;
	SQL
	log "MariaDB started on 127.0.0.1:$MY_PORT"
}

start_dynalite() {
	local pidf="$STATE/dynalite.pid"
	if [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null && port_open "$DDB_PORT"; then
		log "dynalite already running on $DDB_PORT"
		return
	fi
	command -v node >/dev/null || die "Node.js is required for dynalite"
	if [ ! -x "$REPO/node_modules/.bin/dynalite" ]; then
		log "installing dynalite (npm ci)"
		(cd "$REPO" && npm ci --no-audit --no-fund --loglevel=error >"$STATE/npm.log" 2>&1) || { tail -n 20 "$STATE/npm.log" >&2; die "npm ci failed"; }
	fi
	# In memory; tables are created instantly so tests do not wait.
	nohup node "$REPO/scripts/dynalite.js" --host 127.0.0.1 --port "$DDB_PORT" \
		--createTableMs 0 --deleteTableMs 0 --updateTableMs 0 >"$STATE/dynalite.log" 2>&1 &
	echo $! >"$pidf"
	wait_for dynalite 30 "$STATE/dynalite.log" port_open "$DDB_PORT"
	log "dynalite started on 127.0.0.1:$DDB_PORT"
}

# moto's server is started with every other service rather than when a
# test first needs it: it is up in about 5 s and holds about 80 MB, less
# than the bookkeeping a start on demand would need under test.sh's shared
# services. Its state is in memory; tests make their own tables.
start_moto() {
	local pidf="$STATE/moto.pid"
	if [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null && port_open "$MOTO_PORT"; then
		log "moto already running on $MOTO_PORT"
		return
	fi
	# Without moto the other services still start (make demo needs none of
	# it): .services/env then leaves DYNAFOLD_TEST_MOTO_ENDPOINT out, and
	# the tests that need moto skip, or fail under DYNAFOLD_INTEGRATION=1.
	if ! command -v moto_server >/dev/null; then
		if ! command -v python3 >/dev/null; then
			log "Python 3 is required for moto's server: moto not started"
			return 0
		fi
		log "installing moto's server (pip install 'moto[server]')"
		if ! python3 -m pip install --quiet 'moto[server]>=5.2,<6' >"$STATE/pip.log" 2>&1; then
			tail -n 5 "$STATE/pip.log" >&2
			log "pip install 'moto[server]' failed (see $STATE/pip.log): moto not started; install it where moto_server lands on PATH (a virtualenv, pyenv)"
			return 0
		fi
		hash -r
		if ! command -v moto_server >/dev/null; then
			log "moto installed but moto_server is not on PATH: moto not started"
			return 0
		fi
	fi
	nohup moto_server -H 127.0.0.1 -p "$MOTO_PORT" >"$STATE/moto.log" 2>&1 &
	echo $! >"$pidf"
	wait_for moto 60 "$STATE/moto.log" port_open "$MOTO_PORT"
	log "moto started on 127.0.0.1:$MOTO_PORT"
}

start_s3rver() {
	local pidf="$STATE/s3rver.pid"
	if [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null && port_open "$S3_PORT"; then
		log "s3rver already running on $S3_PORT"
		return
	fi
	command -v node >/dev/null || die "Node.js is required for s3rver"
	if [ ! -x "$REPO/node_modules/.bin/s3rver" ]; then
		log "installing s3rver (npm ci)"
		(cd "$REPO" && npm ci --no-audit --no-fund --loglevel=error >"$STATE/npm.log" 2>&1) || { tail -n 20 "$STATE/npm.log" >&2; die "npm ci failed"; }
	fi
	# Objects on disk under $STATE/s3; any well-formed signature is
	# accepted, so whatever credentials the AWS chain yields will do.
	mkdir -p "$STATE/s3"
	nohup node "$REPO/node_modules/s3rver/bin/s3rver.js" -d "$STATE/s3" -a 127.0.0.1 -p "$S3_PORT" \
		--silent --allow-mismatched-signatures --no-vhost-buckets >"$STATE/s3rver.log" 2>&1 &
	echo $! >"$pidf"
	wait_for s3rver 30 "$STATE/s3rver.log" port_open "$S3_PORT"
	log "s3rver started on 127.0.0.1:$S3_PORT"
}

# pg_dsn is the test PostgreSQL server's DSN, as the tests get it.
pg_dsn() { echo "postgres://dynafold:dynafold@127.0.0.1:$PG_PORT/postgres?sslmode=disable"; }

write_env() {
	cat >"$STATE/env" <<-EOF
		export DYNAFOLD_TEST_PG_DSN='$(pg_dsn)'
		export DYNAFOLD_TEST_MYSQL_DSN='dynafold:dynafold@tcp(127.0.0.1:$MY_PORT)/'
		export DYNAFOLD_TEST_DYNAMODB_ENDPOINT='http://127.0.0.1:$DDB_PORT'
		export DYNAFOLD_TEST_S3_ENDPOINT='http://127.0.0.1:$S3_PORT'
	EOF
	if port_open "$MOTO_PORT"; then
		echo "export DYNAFOLD_TEST_MOTO_ENDPOINT='http://127.0.0.1:$MOTO_PORT'" >>"$STATE/env"
	fi
	cat "$STATE/env"
}

stop_all() {
	local bin user pgd
	pgd="$(pg_dir)"
	if [ -f "$pgd/postmaster.pid" ]; then
		bin="$(pg_bindir || true)"
		user="$(stat -c %U "$pgd")"
		[ -n "$bin" ] && as_pg "$user" "$bin/pg_ctl" -D "$pgd" -m fast -w stop >/dev/null 2>&1 || true
		log "PostgreSQL stopped"
	fi
	if [ -f "$STATE/mysql.pid" ]; then
		local pid
		pid="$(cat "$STATE/mysql.pid")"
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		rm -f "$STATE/mysql.pid"
		log "MariaDB stopped"
	fi
	if [ -f "$STATE/dynalite.pid" ]; then
		kill "$(cat "$STATE/dynalite.pid")" 2>/dev/null || true
		rm -f "$STATE/dynalite.pid"
		log "dynalite stopped"
	fi
	if [ -f "$STATE/moto.pid" ]; then
		kill "$(cat "$STATE/moto.pid")" 2>/dev/null || true
		rm -f "$STATE/moto.pid"
		log "moto stopped"
	fi
	if [ -f "$STATE/s3rver.pid" ]; then
		kill "$(cat "$STATE/s3rver.pid")" 2>/dev/null || true
		rm -f "$STATE/s3rver.pid"
		log "s3rver stopped"
	fi
}

# stale_slots names the inactive replication slots that hold more than
# 1 GB of WAL. A sync, bench or fuzz run killed before its cleanup leaves
# its slot and database behind, and the slot keeps every WAL segment from
# then on: one held 35 GB and filled this machine's disk. Dropping the
# slot's database (DROP DATABASE … WITH (FORCE)) drops the slot with it.
stale_slots() {
	command -v psql >/dev/null || return 0
	psql "$(pg_dsn)" -Atc \
		"SELECT slot_name, database, pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn))
		   FROM pg_replication_slots
		  WHERE NOT active AND pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) > 1e9" 2>/dev/null |
		while IFS='|' read -r slot db held; do
			echo "          inactive slot $slot (database $db) holds $held of WAL: drop it with pg_drop_replication_slot('$slot') or drop its database"
		done
}

status() {
	local ok=0
	port_open "$PG_PORT" && echo "postgres  up   127.0.0.1:$PG_PORT" || { echo "postgres  down"; ok=1; }
	port_open "$PG_PORT" && stale_slots
	port_open "$MY_PORT" && echo "mariadb   up   127.0.0.1:$MY_PORT" || { echo "mariadb   down"; ok=1; }
	port_open "$DDB_PORT" && echo "dynalite  up   127.0.0.1:$DDB_PORT" || { echo "dynalite  down"; ok=1; }
	port_open "$MOTO_PORT" && echo "moto      up   127.0.0.1:$MOTO_PORT" || { echo "moto      down"; ok=1; }
	port_open "$S3_PORT" && echo "s3rver    up   127.0.0.1:$S3_PORT" || { echo "s3rver    down"; ok=1; }
	return $ok
}

case "${1:-}" in
start)
	mkdir -p "$STATE"
	chmod 755 "$STATE"
	start_postgres
	start_mariadb
	start_dynalite
	start_moto
	start_s3rver
	write_env
	;;
stop) stop_all ;;
status) status ;;
env) cat "$STATE/env" ;;
*)
	echo "usage: $0 start|stop|status|env" >&2
	exit 2
	;;
esac
