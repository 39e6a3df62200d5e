package main

import (
	"io"
	"log/slog"
	"sync"

	"github.com/dynafold/dynafold/internal/redact"
)

// console is stderr as log lines and messages see it. While a live
// terminal display runs, lines go through the display (which prints them
// above its bars) so that a redraw does not cover them; otherwise they go
// straight to stderr. Every command and the signal handler write through
// it, so one Logger serves migrate, verify and any later long-running
// command alike. It redacts what it is given (see secrets.go) before
// either: the display draws on the terminal itself, unredacted.
type console struct {
	mu      sync.Mutex
	base    io.Writer
	via     io.Writer // the live display, or nil
	secrets *redact.Redactor
}

func newConsole(w io.Writer, secrets *redact.Redactor) *console {
	return &console{base: w, secrets: secrets}
}

// Write implements io.Writer. A line the display can no longer take (it
// has just ended) goes to stderr directly.
func (c *console) Write(p []byte) (int, error) {
	n := len(p)
	if r := c.secrets.String(string(p)); r != string(p) {
		p = []byte(r)
	}
	c.mu.Lock()
	via := c.via
	c.mu.Unlock()
	if via != nil {
		if _, err := via.Write(p); err == nil {
			return n, nil
		}
	}
	if _, err := c.base.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// through sends lines through w (a live display) until the returned
// function is called.
func (c *console) through(w io.Writer) (restore func()) {
	c.mu.Lock()
	c.via = w
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.via = nil
		c.mu.Unlock()
	}
}

// newLogger returns the run's logger: text for a person at a terminal,
// JSON lines (one object each, like the progress lines) for log collectors
// and CI. Keys are snake_case; nothing is logged per row or per batch at
// info level or above.
func newLogger(w io.Writer, level slog.Level, terminal bool) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if terminal {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
