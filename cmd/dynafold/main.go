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
// another. A migration's live data is bounded (a 64 MiB duplicate-key
// filter plus rows and items in flight); the limit keeps the collector's
// headroom from doubling that, which matters when rows carry large nested
// aggregates.
const memoryLimit = 180 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	os.Exit(execute(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
