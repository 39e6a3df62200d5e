# dynafold — common tasks. `make test`, `make test-full` and `make demo`
# work on a fresh Debian machine with Go and Node: they install and start
# what they need. `make test` is the CI tier, `make test-full` the nightly
# tier (see docs/development.md, "Tests").

.PHONY: build static test test-full demo bench services services-stop lint test-private-dir

build:
	go build -o bin/dynafold ./cmd/dynafold

# The container image's binary, built as the Dockerfile builds it: static
# (no cgo), paths trimmed, no VCS stamp, stripped.
static:
	CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w' -o bin/dynafold-static ./cmd/dynafold

test:
	bash scripts/test.sh

test-full:
	bash scripts/test.sh --full

demo:
	bash scripts/demo.sh

bench:
	bash scripts/bench.sh

services:
	bash scripts/services.sh start

services-stop:
	bash scripts/services.sh stop

test-private-dir:
	bash scripts/test-private-dir.sh

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	go vet ./...
