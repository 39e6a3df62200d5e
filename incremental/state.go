package incremental

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dynafold/dynafold/internal/durable"
)

const stateVersion = 1

// State is the file next to the checkpoint that remembers, per source
// table, the watermark of the last successful incremental run.
type State struct {
	Version int `json:"version"`
	// Fingerprint is the mapping's: watermarks kept under another mapping
	// say nothing about items this mapping builds, so they are not used.
	Fingerprint string `json:"mapping_fingerprint"`
	Table       string `json:"table"`
	// Watermarks is, per table, the largest change-column value read at
	// the start of the last successful run, as the source prints it.
	Watermarks map[string]string `json:"watermarks,omitempty"`
	Completed  time.Time         `json:"completed,omitempty"`
	// Pending is a run that started and has not yet succeeded: a rerun
	// resumes it with the same bounds, so that its checkpoint matches.
	Pending *Pending `json:"pending,omitempty"`
}

// Pending is a run under way.
type Pending struct {
	// Full is set when the run reads everything (no earlier state).
	Full bool `json:"full,omitempty"`
	// Watermarks are the ones this run records when it succeeds.
	Watermarks map[string]string `json:"watermarks,omitempty"`
	// Since is, per table, the bound past which rows count as changed:
	// the previous watermark minus the overlap.
	Since   map[string]string `json:"since,omitempty"`
	Started time.Time         `json:"started"`
}

// PathFor names the state file of a checkpoint file:
// .dynafold/T.checkpoint.json → .dynafold/T.incremental.json.
func PathFor(checkpointPath string) string {
	dir, base := filepath.Split(checkpointPath)
	base = strings.TrimSuffix(base, ".json")
	base = strings.TrimSuffix(base, ".checkpoint")
	return filepath.Join(dir, base+".incremental.json")
}

// CheckpointFor names the checkpoint of the incremental pass itself (and
// of its soft-delete pass), kept apart from the full run's checkpoint.
func CheckpointFor(statePath, pass string) string {
	return strings.TrimSuffix(statePath, ".json") + "." + pass + ".checkpoint.json"
}

// Load reads the state, or returns nil when there is none.
func Load(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading incremental state %s: %w", path, err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("reading incremental state %s: %w", path, err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("incremental state %s has version %d; this dynafold reads version %d", path, s.Version, stateVersion)
	}
	return &s, nil
}

// Save replaces the state durably (durable.WriteFile), so that a crash
// leaves the old state or the new one, never a torn file, and a power loss
// cannot undo a save the run went on from.
func Save(path string, s *State) error {
	s.Version = stateVersion
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("writing incremental state %s: %w", path, err)
	}
	return nil
}
