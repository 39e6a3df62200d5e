#!/usr/bin/env bash
# The project's test commands. Both start PostgreSQL, MariaDB, dynalite, moto and
# s3rver when they are not running (installing what is missing), run with
# DYNAFOLD_INTEGRATION=1, so that a missing service fails the run instead
# of skipping tests, stop the services they started, and end by printing
# the 20 slowest tests from the `go test -json` events (kept in
# test-results/, or $DYNAFOLD_TEST_RESULTS).
#
#   scripts/test.sh          `make test`, the CI tier: each behaviour at the
#                            smallest size that proves it. The CLI the tests
#                            run is a plain build, except in the end-to-end
#                            tests marked clitest.RaceBuilt; -race on the
#                            packages where concurrency lives.
#   scripts/test.sh --full   `make test-full`, the nightly tier: the full
#                            sizes, every design, -race on every package and
#                            a race-built CLI in every test, then bounded
#                            fuzzing of every fuzz target and the sync
#                            fuzzer at 1,000,000 operations per engine.
#   scripts/test.sh [--full] -run TestMigrate ./cmd/dynafold/
#                            any subset: the arguments go to one go test
#   DYNAFOLD_KEEP_SERVICES=1 scripts/test.sh   leave the services running
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

TIER=ci
if [ "${1:-}" = --full ]; then
	TIER=full
	shift
fi

STATE="${DYNAFOLD_SERVICES_DIR:-$REPO/.services}"
mkdir -p "$STATE"
# Several test runs may share the services (a developer's loops, parallel
# sessions): a count of users under a lock makes only the last run out
# stop them, and only if a run of this group started them from none. A
# run that finds some up (started by hand, or a service added since they
# were started) starts the rest and leaves them all running.
exec 9>"$STATE/test.lock"
flock 9
users=$(cat "$STATE/test.users" 2>/dev/null || echo 0)
up="$(bash scripts/services.sh status 2>/dev/null || true)"
if [ "$users" -le 0 ] && [[ "$up" != *" up "* ]]; then
	echo 1 >"$STATE/test.started"
elif [ "$users" -le 0 ]; then
	echo 0 >"$STATE/test.started"
fi
echo $((users + 1)) >"$STATE/test.users"
bash scripts/services.sh start >/dev/null
flock -u 9
BIN="$(mktemp -d "${TMPDIR:-/tmp}/dynafold-test-bin.XXXXXX")"
leave() {
	rm -rf "$BIN"
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
# What design's tests check their output with: headless Chromium (the
# Debian package) and the CDK toolchain pinned in design/testdata/cdk.
if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ]; then
	echo "test.sh: installing chromium from Debian"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if [ ! -d design/testdata/cdk/node_modules/aws-cdk-lib ]; then
	echo "test.sh: installing the CDK toolchain (npm ci in design/testdata/cdk)"
	(cd design/testdata/cdk && npm ci --no-audit --no-fund --loglevel=error)
fi
# shellcheck disable=SC1091
source "$STATE/env"
export DYNAFOLD_INTEGRATION=1

# The CLI the tests run, built once for every package: plain and
# race-built, with VCS information (TestVersion reads it back).
started=$SECONDS
go build -buildvcs=auto -o "$BIN/dynafold" ./cmd/dynafold &
plain_build=$!
go build -buildvcs=auto -race -o "$BIN/dynafold-race" ./cmd/dynafold
wait "$plain_build"
go build -o "$BIN/testlog" ./internal/testlog
echo "test.sh: CLI built in $((SECONDS - started)) s (plain and race)"
export DYNAFOLD_TEST_BINARY="$BIN/dynafold" DYNAFOLD_TEST_RACE_BINARY="$BIN/dynafold-race"
if [ "$TIER" = full ]; then
	export DYNAFOLD_TEST_FULL=1 DYNAFOLD_TEST_BINARY="$BIN/dynafold-race"
fi

RESULTS="${DYNAFOLD_TEST_RESULTS:-$REPO/test-results}"
mkdir -p "$RESULTS"
rm -f "$RESULTS"/*.json
# gotest NAME ARGS...: one go test run, its events kept in NAME.json.
gotest() {
	local name="$1"
	shift
	go test -json -count=1 "$@" 2>&1 | "$BIN/testlog" -save "$RESULTS/$name.json"
}

# Where concurrency lives: these packages run under the race detector in
# the CI tier too.
RACE_PKGS=(./pipeline/... ./sink/... ./cdc/... ./verify/... ./export/... ./checkpoint/...
	./incremental/... ./source/... ./internal/faultproxy/... ./metrics/...)

status=0
started=$SECONDS
if [ "$#" -gt 0 ]; then
	flags=()
	[ "$TIER" = full ] && flags=(-race)
	gotest run "${flags[@]}" -timeout 120m "$@" || status=$?
elif [ "$TIER" = full ]; then
	# ./testdata/gen is named explicitly: go excludes testdata from ./... .
	gotest full -race -timeout 150m -parallel "${DYNAFOLD_TEST_PARALLEL:-6}" ./... ./testdata/gen/ || status=$?
	for target in FuzzTemplate FuzzLoad FuzzLoadMutated; do
		gotest "fuzz-$target" -run='^$' -fuzz="^$target\$" -fuzztime="${DYNAFOLD_FUZZTIME:-60s}" ./mapping/ || status=$?
	done
	for target in FuzzSignerMatchesTheSDK FuzzParseSuccessAgreesWithTheSDK FuzzWritersAckOnlyWhatArrived; do
		gotest "fuzz-$target" -run='^$' -fuzz="^$target\$" -fuzztime="${DYNAFOLD_FUZZTIME:-60s}" ./sink/ || status=$?
	done
	# The sync fuzzer at full size: every design from both engines,
	# DYNAFOLD_FUZZ_OPS operations each (1,000,000 per engine over the seven
	# designs), sync SIGKILLed 5 times in each run, the source server
	# restarted 3 times (a server of the run's own) and 5% of its DynamoDB
	# writes failed by a fault proxy; then one transaction of
	# 1,000,000 rows per engine, on a server of its own too (a
	# transaction open for minutes holds up every replication slot being
	# created on its server). The engines run side by side. Results go
	# to $RESULTS/syncfuzz/ (docs/sync.md cites the last run).
	go build -o "$BIN/dynafold-bench" ./cmd/dynafold-bench
	fuzz_seed="${DYNAFOLD_FUZZ_SEED:-$((RANDOM * 32768 + RANDOM))}"
	echo "test.sh: syncfuzz seed $fuzz_seed"
	mkdir -p "$RESULTS/syncfuzz"
	fuzz_pids=()
	for engine in postgres mysql; do
		(
			"$BIN/dynafold-bench" syncfuzz --bin "$BIN/dynafold" --engine "$engine" --design all \
				--ops "${DYNAFOLD_FUZZ_OPS:-142858}" --phase-ops 25000 --kills 5 --restarts 3 --hot 10000 --dynamo-faults 0.05 \
				--seed "$fuzz_seed" --out "$RESULTS/syncfuzz"
			"$BIN/dynafold-bench" syncfuzz --bin "$BIN/dynafold" --engine "$engine" --design portfolios \
				--ops 0 --hot 0 --big-txn "${DYNAFOLD_FUZZ_BIG_TXN:-1000000}" --own-server --seed "$fuzz_seed" --out "$RESULTS/syncfuzz/big"
		) >"$RESULTS/syncfuzz/$engine.log" 2>&1 &
		fuzz_pids+=($!)
	done
	for pid in "${fuzz_pids[@]}"; do
		wait "$pid" || status=$?
	done
	grep -hv '^\[' "$RESULTS"/syncfuzz/*.log || true
else
	# Every other package runs without: all of them but the race set's
	# and the CLI's.
	mapfile -t plain < <(comm -23 <(go list ./... ./testdata/gen/ | sort) \
		<({ go list "${RACE_PKGS[@]}"; go list ./cmd/dynafold/; } | sort))
	# The CLI's tests are the long pole: they start at once, beside the
	# packages' own tests.
	gotest cli -timeout 40m -parallel "${DYNAFOLD_TEST_PARALLEL:-4}" ./cmd/dynafold/ &
	cli=$!
	gotest race -race -timeout 30m "${RACE_PKGS[@]}" || status=$?
	gotest plain -timeout 30m "${plain[@]}" || status=$?
	# The hand-written signer and answer parser, fuzzed against the SDK,
	# and writers' acknowledgements against what an endpoint with faults
	# received, for a bounded time on every run (the full tier: a minute
	# each).
	for target in FuzzSignerMatchesTheSDK FuzzParseSuccessAgreesWithTheSDK FuzzWritersAckOnlyWhatArrived; do
		gotest "fuzz-$target" -run='^$' -fuzz="^$target\$" -fuzztime=10s ./sink/ || status=$?
	done
	wait "$cli" || status=$?
fi
echo "test.sh: $TIER tier tests took $((SECONDS - started)) s"
"$BIN/testlog" -slowest 20 "$RESULTS"/*.json
exit "$status"
