// Command loadsql recreates a database and loads SQL files into it, for
// scripts/demo.sh on machines without psql or mariadb clients.
//
//	go run ./internal/testenv/loadsql postgres|mysql SERVER_DSN DBNAME FILE...
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/dynafold/dynafold/internal/testenv"
)

func main() {
	if len(os.Args) < 5 {
		fmt.Fprintln(os.Stderr, "usage: loadsql postgres|mysql SERVER_DSN DBNAME FILE...")
		os.Exit(2)
	}
	driver, server, name := os.Args[1], os.Args[2], os.Args[3]
	ctx := context.Background()
	dsn, err := testenv.Recreate(ctx, driver, server, name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadsql:", err)
		os.Exit(1)
	}
	for _, f := range os.Args[4:] {
		data, err := os.ReadFile(f)
		if err == nil {
			err = testenv.Exec(ctx, driver, dsn, string(data))
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "loadsql: %s: %v\n", f, err)
			os.Exit(1)
		}
	}
}
