// Command dynafold-faultproxy runs a fault-injecting reverse proxy (package
// internal/faultproxy) in front of a DynamoDB-compatible server, so dynafold
// can be run against throttling, partial batch success, 5xx errors,
// connection resets and latency.
//
//	dynafold-faultproxy -listen 127.0.0.1:8002 -backend http://127.0.0.1:58000 \
//	    -throttle 0.1 -throttling 0.05 -partial 0.2 -5xx 0.05 -reset 0.02 \
//	    -reset-after 0.01 -latency 50ms -seed 1 -ops BatchWriteItem
//
// Fault rates are exclusive per-request probabilities and must add up to at
// most 1. Counters are at GET /__faultproxy/stats.
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

	"github.com/dynafold/dynafold/internal/faultproxy"
)

func main() {
	var cfg faultproxy.Config
	listen := flag.String("listen", "127.0.0.1:8002", "listen address")
	backend := flag.String("backend", "http://127.0.0.1:58000", "DynamoDB-compatible backend URL")
	flag.Float64Var(&cfg.Throttle, "throttle", 0, "rate of ProvisionedThroughputExceededException (not forwarded)")
	flag.Float64Var(&cfg.Throttling, "throttling", 0, "rate of ThrottlingException (not forwarded)")
	flag.Float64Var(&cfg.Partial, "partial", 0, "rate of BatchWriteItem calls forwarded in part, the rest reported unprocessed")
	flag.Float64Var(&cfg.Error5xx, "5xx", 0, "rate of 500/503 responses, alternating (not forwarded)")
	flag.Float64Var(&cfg.Reset, "reset", 0, "rate of connection resets before forwarding")
	flag.Float64Var(&cfg.ResetAfter, "reset-after", 0, "rate of connection resets after the backend applied the request")
	flag.DurationVar(&cfg.Latency, "latency", 0, "maximum random delay added to each faultable request")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	ops := flag.String("ops", "BatchWriteItem", `comma-separated operations subject to faults, or "*" for all`)
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "dynafold-faultproxy: unexpected arguments:", flag.Args())
		os.Exit(2)
	}
	for _, op := range strings.Split(*ops, ",") {
		if op = strings.TrimSpace(op); op != "" {
			cfg.Ops = append(cfg.Ops, op)
		}
	}

	p, err := faultproxy.New(*backend, cfg)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	err = p.ListenAndServe(ctx, *listen, func(url string) {
		log.Printf("dynafold-faultproxy listening on %s -> %s (throttle=%g throttling=%g partial=%g 5xx=%g reset=%g reset-after=%g latency=%s seed=%d ops=%s)",
			url, *backend, cfg.Throttle, cfg.Throttling, cfg.Partial, cfg.Error5xx, cfg.Reset, cfg.ResetAfter, cfg.Latency, cfg.Seed, *ops)
	})
	if err != nil {
		log.Fatal(err)
	}
}
