// Package drivers opens a source.Source for a DSN, choosing the driver,
// and hands out that source's change log for live sync (OpenChangeSource).
// It lives apart from package source so that the drivers can import
// source's shared types without a cycle.
package drivers

import (
	"context"
	"fmt"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/source/mysql"
	"github.com/dynafold/dynafold/source/postgres"
)

// Open connects to the database the DSN names, with at most maxConns
// connections (0: the driver's default).
func Open(ctx context.Context, dsn source.DSN, maxConns int) (source.Source, error) {
	switch dsn.Driver() {
	case "postgres":
		return postgres.Open(ctx, dsn, postgres.Options{MaxConns: maxConns})
	case "mysql":
		return mysql.Open(ctx, dsn, mysql.Options{MaxConns: maxConns})
	}
	return nil, fmt.Errorf("unknown source driver %q", dsn.Driver())
}

// Transient reports whether err, from either driver, is a fault a later
// attempt can outlive (a lost or refused connection, a server restarting):
// the classification live sync waits out instead of stopping. Each driver
// classifies by its own error types, so asking both is safe.
func Transient(err error) bool {
	return postgres.Transient(err) || mysql.Transient(err)
}
