#!/usr/bin/env bash
# Refreshes cmd/dynafold/default.pgo, the CPU profile from which the Go
# toolchain optimizes every build of ./cmd/dynafold (profile-guided
# optimization; `go build` uses it on its own). The profile is one migrate
# of the benchmark's 1M-item portfolio dataset from PostgreSQL into the
# no-op endpoint: the reader, builder and writer that migrate, export and
# sync share. Run it after a change that moves the hot path, and commit the
# file.
#
#   scripts/pgo-profile.sh
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
# shellcheck source=scripts/bench-tools.sh
source scripts/bench-tools.sh
dsn=$(bin/dynafold-bench gen --pg-dsn "$DYNAFOLD_TEST_PG_DSN" --items 1000000)

work=$(mktemp -d)
addr="127.0.0.1:${DYNAFOLD_PGO_NOOP_PORT:-59123}"
bin/dynafold-noop -addr "$addr" >"$work/noop.log" 2>&1 &
noop=$!
trap 'kill $noop 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 50); do
	if (exec 3<>"/dev/tcp/${addr%:*}/${addr#*:}") 2>/dev/null; then break; fi
	sleep 0.1
done
# The no-op endpoint checks no signature; the SDK only needs some.
export AWS_ACCESS_KEY_ID=pgo AWS_SECRET_ACCESS_KEY=pgo AWS_REGION=us-east-1
bin/dynafold table create --no-source --config configs/portfolios.yaml --endpoint "http://$addr" --table pgo >/dev/null
bin/dynafold migrate --config configs/portfolios.yaml --endpoint "http://$addr" --table pgo --source-dsn "$dsn" \
	--checkpoint "$work/pgo.checkpoint.json" --progress none --cpuprofile "$work/cpu.prof"
go tool pprof -proto "$work/cpu.prof" >cmd/dynafold/default.pgo 2>/dev/null
echo "wrote cmd/dynafold/default.pgo ($(wc -c <cmd/dynafold/default.pgo) bytes)"
