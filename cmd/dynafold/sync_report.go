package main

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/dynafold/dynafold/cdc"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/statestore"
)

// syncStatus prints the live status of a streaming sync: one line
// rewritten in place on a terminal, a JSON line every 5 seconds otherwise.
func (a *app) syncStatus() func(cdc.Status) {
	mode := a.v.GetString("progress")
	if mode == "auto" {
		mode = "json"
		if isTerminal(a.stderr) && !dumbTerminal() {
			mode = "tty"
		}
	}
	var mu sync.Mutex
	var last time.Time
	every := a.v.GetDuration("status-every")
	switch mode {
	case "tty":
		return func(s cdc.Status) {
			mu.Lock()
			defer mu.Unlock()
			state := ""
			if s.State != "" && s.State != "streaming" {
				state = s.State + " · "
			}
			if s.Fault != "" {
				state += s.Fault + " · "
			}
			fmt.Fprintf(a.stderr, "\r\033[Ksync: %slag %.1fs, %s WAL · %s changes/s · %s changes, %s items written, %s deleted (%.1f per change)%s",
				state, s.LagSeconds, byteSize(s.LagBytes), pipeline.Thousands(int64(s.ChangesPerSec)), pipeline.Thousands(s.Run.Changes),
				pipeline.Thousands(s.Run.ItemsWritten), pipeline.Thousands(s.Run.ItemsDeleted), s.FanOut, caughtUpNote(s.CaughtUp))
		}
	case "json":
		return func(s cdc.Status) {
			mu.Lock()
			defer mu.Unlock()
			// The last line of a run (caught up, or stopping) is always
			// printed.
			if time.Since(last) < every && !s.CaughtUp && s.State != "stopping" {
				return
			}
			last = time.Now()
			b, _ := json.Marshal(struct {
				Event string `json:"event"`
				cdc.Status
			}{"sync_status", s})
			fmt.Fprintln(a.stderr, string(b))
		}
	}
	return nil
}

func caughtUpNote(c bool) string {
	if c {
		return " · caught up"
	}
	return ""
}

func (a *app) printSyncSummary(s *cdc.Summary, state statestore.Store) {
	if a.v.GetString("output") == "json" {
		writeJSON(a.stdout, s)
		return
	}
	if s.Load != nil {
		a.printSummary(s.Load, loadWhere(state))
	}
	if isTerminal(a.stderr) {
		fmt.Fprintln(a.stderr)
	}
	r := s.Run
	fmt.Fprintf(a.stdout, "sync %s: %s transactions, %s changes applied; %s rows re-derived, %s items written, %s deleted, %s rows rejected\n",
		s.Phase, pipeline.Thousands(r.Transactions), pipeline.Thousands(r.Changes), pipeline.Thousands(r.RowsDerived), pipeline.Thousands(r.ItemsWritten), pipeline.Thousands(r.ItemsDeleted), pipeline.Thousands(r.RowsRejected))
	note := ""
	if s.CaughtUp {
		note = fmt.Sprintf(" (caught up with %s)", s.Target)
	}
	slot := ""
	if s.Slot != "" {
		slot = "; slot " + s.Slot
	}
	fmt.Fprintf(a.stdout, "confirmed through %s%s%s; checkpoint %s\n", s.Confirmed, note, slot, state.Where())
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// loadWhere names the initial load's checkpoint: its file, or the store.
func loadWhere(s statestore.Store) string {
	if f, ok := s.(*statestore.File); ok {
		return statestore.LoadPath(f.Path())
	}
	return s.Where()
}
