// Command dynafold-noop serves a DynamoDB-protocol endpoint that accepts
// writes and stores nothing (package internal/ddbnoop), for measuring
// dynafold's own throughput ceiling and rehearsing throttling.
//
//	dynafold-noop -addr 127.0.0.1:8001 -table items -pk PK -sk SK -gsi GSI1:GSI1PK:SK -wcu 5000
//
// Counters are at GET /stats (reset with POST /stats/reset).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dynafold/dynafold/internal/ddbnoop"
)

// gsiFlags collects repeated -gsi NAME:PK[:SK] flags.
type gsiFlags []ddbnoop.IndexSpec

func (g *gsiFlags) String() string {
	parts := make([]string, len(*g))
	for i, s := range *g {
		parts[i] = strings.TrimSuffix(s.Name+":"+s.PK+":"+s.SK, ":")
	}
	return strings.Join(parts, ",")
}

func (g *gsiFlags) Set(v string) error {
	spec, err := ddbnoop.ParseIndexSpec(v)
	if err != nil {
		return err
	}
	*g = append(*g, spec)
	return nil
}

func main() {
	var (
		addr  = flag.String("addr", "127.0.0.1:8001", "listen address")
		wcu   = flag.Float64("wcu", 0, "table write units per second, burst one second's worth (0: unlimited)")
		pwcu  = flag.Float64("partition-wcu", 0, "write units per second per partition-key value (0: unlimited; DynamoDB's is 1000)")
		table = flag.String("table", "", "pre-declare this table (string keys); otherwise tables come from CreateTable")
		pk    = flag.String("pk", "PK", "partition key attribute of -table")
		sk    = flag.String("sk", "", "sort key attribute of -table (empty: none)")
		gsis  gsiFlags
	)
	flag.Var(&gsis, "gsi", "GSI of -table as NAME:PK[:SK], repeatable")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "dynafold-noop: unexpected arguments:", flag.Args())
		os.Exit(2)
	}
	if len(gsis) > 0 && *table == "" {
		fmt.Fprintln(os.Stderr, "dynafold-noop: -gsi needs -table")
		os.Exit(2)
	}

	opts := ddbnoop.Options{WCU: *wcu, PartitionWCU: *pwcu}
	if *table != "" {
		opts.Tables = []ddbnoop.TableSpec{{Name: *table, PK: *pk, SK: *sk, GSIs: gsis}}
	}
	srv, err := ddbnoop.NewServer(opts)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	err = srv.ListenAndServe(ctx, *addr, func(url string) {
		log.Printf("dynafold-noop listening on %s (wcu=%g partition-wcu=%g table=%q)", url, *wcu, *pwcu, *table)
	})
	if err != nil {
		log.Fatal(err)
	}
}
