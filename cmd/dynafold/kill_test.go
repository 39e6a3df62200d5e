package main

import (
	"context"
	"encoding/json"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
)

// killWhen runs dynafold with args in dir and kills it with SIGKILL as
// soon as ready() holds, polled every 20 ms: a kill triggered by what the
// run has done (its checkpoint moved), not by the clock, so that the run
// is long enough to be killed on any machine. The run must not end first.
func killWhen(t *testing.T, dir string, env []string, ready func() bool, args ...string) {
	t.Helper()
	cmd := clitest.Command(context.Background(), t, dir, env, args...)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for !ready() {
		select {
		case err := <-done:
			t.Fatalf("the run ended before its kill (%v): make it longer or the trigger sooner", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	<-done
}

// checkpointDoc is what the kill tests read of a checkpoint file: whether
// the run completed, the rows acknowledged per shard, and the export
// sink's durable files.
type checkpointDoc struct {
	Complete bool `json:"complete"`
	Shards   []struct {
		Rows int64 `json:"rows"`
	} `json:"shards"`
	Sink struct {
		Files []json.RawMessage `json:"files"`
	} `json:"sink"`
}

// readCheckpoint reads a checkpoint file, or the zero document while it
// does not exist yet (or is being replaced).
func readCheckpoint(path string) checkpointDoc {
	var doc checkpointDoc
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &doc) != nil {
		return checkpointDoc{}
	}
	return doc
}

// rows is the rows the checkpoint holds as acknowledged.
func (d checkpointDoc) rows() int64 {
	var n int64
	for _, s := range d.Shards {
		n += s.Rows
	}
	return n
}
