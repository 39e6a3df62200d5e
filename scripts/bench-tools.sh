# Sourced by scripts/bench.sh and scripts/pgo-profile.sh: starts the local
# services if needed, loads their addresses, and builds dynafold, the no-op
# endpoint and the benchmark driver into bin/. Expects to run from the
# repository root.
bash scripts/services.sh start >/dev/null
# shellcheck disable=SC1091
source "${DYNAFOLD_SERVICES_DIR:-$PWD/.services}/env"
mkdir -p bin
go build -o bin/dynafold ./cmd/dynafold
go build -o bin/dynafold-noop ./cmd/dynafold-noop
go build -o bin/dynafold-bench ./cmd/dynafold-bench
