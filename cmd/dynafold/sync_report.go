package main

import (
	"fmt"

	"github.com/dynafold/dynafold/cdc"
	"github.com/dynafold/dynafold/internal/render"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/statestore"
)

// syncStatus shows the live status of a streaming sync on the display
// that showed the load's progress (a.progress): a line under the bars on a
// terminal, a JSON line every --status-every otherwise; nothing under
// --progress none.
func (a *app) syncStatus(progress pipeline.Progress) func(cdc.Status) {
	d, ok := progress.(pipeline.StatusDisplay)
	if !ok {
		return nil
	}
	if j, ok := d.(*pipeline.JSONProgress); ok {
		j.StatusEvery(a.v.GetDuration("status-every"))
	}
	return func(s cdc.Status) {
		state := ""
		if s.State != "" && s.State != "streaming" {
			state = s.State + " · "
		}
		if s.Fault != "" {
			// An endpoint's error: on a terminal the line is drawn on
			// the terminal itself, past the redacting stderr.
			state += a.secrets.String(s.Fault) + " · "
		}
		d.ShowStatus(pipeline.Status{
			Line: fmt.Sprintf("sync: %slag %.1fs, %s WAL · %s changes/s · %s changes, %s items written, %s deleted (%.1f per change)%s",
				state, s.LagSeconds, render.Bytes(s.LagBytes), render.Thousands(int64(s.ChangesPerSec)), render.Thousands(s.Run.Changes),
				render.Thousands(s.Run.ItemsWritten), render.Thousands(s.Run.ItemsDeleted), s.FanOut, caughtUpNote(s.CaughtUp)),
			JSON: struct {
				Event string `json:"event"`
				cdc.Status
			}{"sync_status", s},
			// The last line of a run (caught up, or stopping) is always
			// shown.
			Last: s.CaughtUp || s.State == "stopping",
		})
	}
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
	r := s.Run
	fmt.Fprintf(a.stdout, "sync %s: %s transactions, %s changes applied; %s rows re-derived, %s items written, %s deleted, %s rows rejected\n",
		s.Phase, render.Thousands(r.Transactions), render.Thousands(r.Changes), render.Thousands(r.RowsDerived), render.Thousands(r.ItemsWritten), render.Thousands(r.ItemsDeleted), render.Thousands(r.RowsRejected))
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

// loadWhere names the initial load's checkpoint: its file, or the store.
func loadWhere(s statestore.Store) string {
	if f, ok := s.(*statestore.File); ok {
		return statestore.LoadPath(f.Path())
	}
	return s.Where()
}
