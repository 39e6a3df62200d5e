package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// handleSignals turns SIGINT/SIGTERM into a graceful stop: the first closes
// stop (the run stops reading, lets in-flight writes finish within the
// grace period, saves its checkpoint and exits 4); the second exits at once
// with 4, which is safe because the checkpoint only ever holds acknowledged
// positions.
func handleSignals(ctx context.Context, stderr io.Writer) (context.Context, <-chan struct{}, func()) {
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			fmt.Fprintf(stderr, "dynafold: %s: stopping; finishing writes in flight and saving the checkpoint (again to exit at once)\n", s)
			close(stop)
		case <-done:
			return
		}
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "dynafold: exiting now; the last saved checkpoint is valid")
			os.Exit(exitInterrupted)
		case <-done:
		}
	}()
	return ctx, stop, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
