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
)

func main() {
	os.Exit(execute(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
