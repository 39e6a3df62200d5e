// Package clitest runs the dynafold binary in tests, the way an operator
// would: it builds cmd/dynafold once per test process and runs it with
// arguments and environment, capturing output and the exit code.
package clitest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the path of a dynafold binary built from this checkout
// (with the race detector when the tests use it).
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dynafold-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "dynafold")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "./cmd/dynafold")
		cmd := exec.Command("go", args...)
		cmd.Dir = repoRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = errors.New("go build ./cmd/dynafold: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// repoRoot finds the module root from this file's location.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// RepoPath returns a path inside the repository, for configs and testdata.
func RepoPath(rel string) string { return filepath.Join(repoRoot(), rel) }

// Result is one finished run.
type Result struct {
	Code   int
	Stdout string
	Stderr string
}

// Output is stdout and stderr together, for assertions on messages.
func (r Result) Output() string { return r.Stdout + r.Stderr }

// Run runs dynafold with args and extra environment ("NAME=value"), in dir
// (the test's temp dir when empty), with a 5-minute limit.
func Run(t testing.TB, dir string, env []string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := Command(ctx, t, dir, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.Code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running dynafold %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// Command prepares a dynafold process without starting it, for tests that
// signal or kill it mid-run.
func Command(ctx context.Context, t testing.TB, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	cmd := exec.CommandContext(ctx, Binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	return cmd
}

// cleanEnv drops DYNAFOLD_* settings of the developer's shell so that
// tests see only what they pass (the DYNAFOLD_TEST_* service addresses are
// read by the tests themselves, not by the binary).
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DYNAFOLD_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
