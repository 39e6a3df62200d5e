// Command dynafold migrates normalized PostgreSQL and MySQL/MariaDB data
// into one DynamoDB table laid out in single-table design.
//
// This package is the thin edge: cobra commands, viper settings, signal
// handling and exit codes. The work happens in mapping, source, sink,
// checkpoint and pipeline.
package main

import (
	"context"
	"os"
	"runtime/debug"
)

// memoryLimit is the soft limit on the Go heap unless GOMEMLIMIT sets
// another. A migration's live data is bounded (the duplicate-key filter,
// 8 bytes a key, plus rows and items in flight, and for an export the
// rows waiting for their file); the limit keeps the collector's headroom
// from doubling that, which matters when rows carry large nested
// aggregates. 150 MiB of Go memory keeps the process under 180 MB
// resident (the binary and the runtime's own take about 30 MB more).
const memoryLimit = 150 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	os.Exit(execute(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
