package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// A second migrate on a checkpoint another process holds is refused at
// once (exit 1), naming the holder's PID and what to do, and touches
// nothing; once the holder is gone the same command runs. The holder here
// is the test process itself, which makes the refusal deterministic; the
// lock is an flock, so it is held against other processes exactly as a
// running migrate holds it.
func TestSecondRunOnOneCheckpointIsRefused(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0]
	tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
	require.Equal(t, 0, tg.run(t, "", "table", "create").Code)
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "run.checkpoint.json")

	release, err := checkpoint.Lock(ckpt)
	require.NoError(t, err)
	r := tg.run(t, dir, "migrate", "--progress", "none", "--checkpoint", ckpt)
	require.Equal(t, 1, r.Code, r.Output())
	require.Contains(t, r.Stderr, fmt.Sprintf("checkpoint %s is in use by another dynafold process (pid %d)", ckpt, os.Getpid()))
	require.Contains(t, r.Stderr, "wait for that run to finish")
	require.Contains(t, r.Stderr, "--checkpoint")
	require.NoFileExists(t, ckpt, "the refused run wrote no checkpoint")
	require.Empty(t, testenv.ScanItems(t, tg.client, tg.table), "the refused run wrote nothing")

	// --restart must not discard a checkpoint in use either.
	r = tg.run(t, dir, "migrate", "--progress", "none", "--checkpoint", ckpt, "--restart")
	require.Equal(t, 1, r.Code, r.Output())

	release()
	r = tg.run(t, dir, "migrate", "--progress", "none", "--checkpoint", ckpt)
	require.Equal(t, 0, r.Code, r.Output())
	require.FileExists(t, ckpt)
}

// Two real migrate processes on one checkpoint: while the first runs
// (paced to 1 write unit a second, so its ten items take seconds), the
// second is refused with the first one's PID.
func TestConcurrentMigratesShareNoCheckpoint(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0]
	tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
	require.Equal(t, 0, tg.run(t, "", "table", "create").Code)
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "run.checkpoint.json")

	first := clitest.Command(t.Context(), t, dir, nil, append([]string{"migrate", "--progress", "none", "--checkpoint", ckpt, "--max-wcu", "1"}, tg.flags...)...)
	require.NoError(t, first.Start())
	defer func() { _ = first.Process.Kill(); _ = first.Wait() }()
	// Wait until the first holds the lock (its PID is in the lock file).
	want := fmt.Sprintf("%d\n", first.Process.Pid)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(ckpt + ".lock")
		return string(b) == want
	}, 2*time.Minute, 50*time.Millisecond)
	r := tg.run(t, dir, "migrate", "--progress", "none", "--checkpoint", ckpt)
	require.Equal(t, 1, r.Code, r.Output())
	require.Contains(t, r.Stderr, fmt.Sprintf("(pid %d)", first.Process.Pid))
}
