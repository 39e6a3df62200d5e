package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dynafold/dynafold/internal/durable"
	"github.com/dynafold/dynafold/internal/render"
	"github.com/dynafold/dynafold/pipeline"
)

// report is the JSON written by --report: what ran, against what, how it
// ended, and the command's own result.
type report struct {
	RunID       string            `json:"run_id"`
	Command     string            `json:"command"`
	Table       string            `json:"table,omitempty"`
	Source      string            `json:"source,omitempty"`
	Fingerprint string            `json:"mapping_fingerprint,omitempty"`
	Checkpoint  string            `json:"checkpoint,omitempty"`
	Started     time.Time         `json:"started"`
	Ended       time.Time         `json:"ended"`
	ExitCode    int               `json:"exit_code"`
	Error       string            `json:"error,omitempty"`
	Summary     *pipeline.Summary `json:"summary,omitempty"`
	// Result holds command-specific output (verify, diff, patterns, plan).
	Result any `json:"result,omitempty"`
}

func (a *app) newReport(command string) *report {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &report{RunID: hex.EncodeToString(b), Command: command, Started: time.Now().UTC()}
}

// finishReport writes --report (whatever the outcome) and returns err.
func (a *app) finishReport(rep *report, err error) error {
	path := a.v.GetString("report")
	if path == "" {
		return err
	}
	rep.Ended = time.Now().UTC()
	rep.ExitCode = exitCode(err)
	if err != nil {
		rep.Error = err.Error()
	}
	data, merr := a.marshalReport(rep)
	if merr == nil {
		// Replaced durably and owner-only: a CI job reads it after the
		// run, and it names the source and the rows at fault.
		merr = durable.WriteFile(path, append(data, '\n'))
	}
	if merr != nil && err == nil {
		return fmt.Errorf("writing report %s: %w", path, merr)
	}
	return err
}

// marshalReport is the report as --report writes it, redacted (see
// secrets.go): its error and its result hold what endpoints and drivers
// said. HTML characters are not escaped, so that a secret holding & < >
// is written, and found, as it is.
func (a *app) marshalReport(rep *report) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return nil, err
	}
	return []byte(a.secrets.String(b.String())), nil
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func joinLines(lines []string) string { return strings.Join(lines, "\n  - ") }

// printSummary prints the per-entity summary table in the chosen format.
func (a *app) printSummary(s *pipeline.Summary, checkpointPath string) {
	switch a.v.GetString("output") {
	case "json":
		writeJSON(a.stdout, s)
		return
	case "markdown":
		fmt.Fprintln(a.stdout, "| entity | rows read | items written | rejected | skipped | retried requests | throttled requests | seconds | items/s |")
		fmt.Fprintln(a.stdout, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, e := range append(s.Entities, s.Total) {
			fmt.Fprintf(a.stdout, "| %s | %d | %d | %d | %d | %d | %d | %.1f | %.0f |\n",
				e.Entity, e.RowsRead, e.ItemsWritten, e.Rejected, e.Skipped, e.Retried, e.Throttled, e.Seconds, e.ItemsPerSec)
		}
		return
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ENTITY\tROWS READ\tITEMS WRITTEN\tREJECTED\tSKIPPED\tRETRIED\tTHROTTLED\tSECONDS\tITEMS/S\t")
	n := render.Thousands
	for _, e := range append(s.Entities, s.Total) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t\n",
			e.Entity, n(e.RowsRead), n(e.ItemsWritten), n(e.Rejected), n(e.Skipped), n(e.Retried), n(e.Throttled), e.Seconds, render.ThousandsF(e.ItemsPerSec))
	}
	tw.Flush()
	state := "complete"
	switch {
	case s.Failed:
		state = "failed" // the error follows on stderr
	case s.Interrupted:
		state = "interrupted"
	}
	if s.Resumed {
		state += ", resumed from checkpoint"
	}
	fmt.Fprintf(a.stdout, "run %s in %.1fs (this run, the table above); %s requests, %s write units; checkpoint %s\n", state, s.Seconds, n(s.Sink.Requests), n(s.Sink.WriteUnits), checkpointPath)
	t := s.Total
	if s.Resumed || s.Interrupted || s.Failed {
		fmt.Fprintf(a.stdout, "whole migration, as the checkpoint holds it: %s rows and %s items written, %s of the rows by earlier runs\n",
			n(t.CheckpointRows), n(t.CheckpointItems), n(t.ResumedRows))
	}
	if s.Interrupted || s.Failed {
		fmt.Fprintf(a.stdout, "the checkpoint holds %s rows as written; %s rows read ahead of it were not all acknowledged and will be read again on resume\n",
			n(t.CheckpointRows), n(t.ReadAhead()))
	}
	if s.Snapshot.Note != "" {
		fmt.Fprintf(a.stdout, "snapshot: %s\n", s.Snapshot.Note)
	}
	if s.RejectFile != "" {
		fmt.Fprintf(a.stdout, "rejected rows: %s\n", s.RejectFile)
	}
}
