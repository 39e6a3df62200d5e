// Command testlog reads `go test -json` and writes what a CI log needs:
// the usual one line per package, the whole output of every test that
// failed (or never finished, when its package timed out or panicked), and
// at the end the slowest tests with their times, so that a CI log shows
// where the time went.
//
//	go test -json ./... | testlog -save run.json      # stream, keep the events
//	testlog -slowest 20 run.json other.json            # the slowest tests of runs
//
// With -save, every event line is appended to the file as it arrives, so a
// run cut short still leaves its events behind.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	save := flag.String("save", "", "append the events read to this file")
	slowest := flag.Int("slowest", 0, "print the N slowest tests of the event files named as arguments, and nothing else")
	flag.Parse()
	if *slowest > 0 {
		if err := printSlowest(os.Stdout, *slowest, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "testlog:", err)
			os.Exit(1)
		}
		return
	}
	var keep io.Writer = io.Discard
	if *save != "" {
		f, err := os.OpenFile(*save, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testlog:", err)
			os.Exit(1)
		}
		defer f.Close()
		keep = f
	}
	// Unbuffered: a line reaches the log when its package or test ends.
	failed, err := stream(os.Stdin, keep, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testlog:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}
