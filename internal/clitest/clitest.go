// Package clitest runs the dynafold binary in tests, the way an operator
// would: it runs the CLI with arguments and environment, capturing output
// and the exit code.
//
// The binary is a plain build: the work happens in the CLI process, and a
// race-instrumented CLI costs every test several times its run. A small
// named set of end-to-end tests (RaceBuilt) runs a race-built CLI instead,
// and the full tier runs every test against one (DYNAFOLD_TEST_BINARY
// pointing at a race build). scripts/test.sh builds both once for all
// packages and names them in the environment; without it, each is built
// on first use, once per test process.
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

// build is one binary built on first use.
type build struct {
	env  string   // the variable naming a prebuilt binary
	args []string // extra go build arguments
	once sync.Once
	path string
	err  error
}

var (
	plain = &build{env: "DYNAFOLD_TEST_BINARY"}
	race  = &build{env: "DYNAFOLD_TEST_RACE_BINARY", args: []string{"-race"}}
	// raceTests holds the names of tests marked by RaceBuilt.
	raceTests sync.Map
)

func (b *build) get(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		if p := os.Getenv(b.env); p != "" {
			b.path, b.err = filepath.Abs(p)
			return
		}
		dir, err := os.MkdirTemp("", "dynafold-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "dynafold")
		args := append(append([]string{"build", "-buildvcs=auto", "-o", b.path}, b.args...), "./cmd/dynafold")
		cmd := exec.Command("go", args...)
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = errors.New("go " + strings.Join(args, " ") + ": " + err.Error() + "\n" + string(out))
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Binary returns the dynafold binary tests run: $DYNAFOLD_TEST_BINARY, or
// a plain build of this checkout.
func Binary(t testing.TB) string { return plain.get(t) }

// RaceBinary returns a race-built dynafold: $DYNAFOLD_TEST_RACE_BINARY,
// or a build of this checkout with -race.
func RaceBinary(t testing.TB) string { return race.get(t) }

// RaceBuilt makes t and its subtests run the race-built CLI: the named
// end-to-end tests where the CLI's concurrency is exercised hardest (see
// docs/development.md, "Tests").
func RaceBuilt(t testing.TB) {
	raceTests.Store(t.Name(), true)
	t.Cleanup(func() { raceTests.Delete(t.Name()) })
}

// binaryFor is the race-built CLI for a test marked by RaceBuilt (or one
// of its parents), the plain one otherwise.
func binaryFor(t testing.TB) string {
	for name := t.Name(); ; {
		if _, ok := raceTests.Load(name); ok {
			return RaceBinary(t)
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return Binary(t)
		}
		name = name[:i]
	}
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
	cmd := exec.CommandContext(ctx, binaryFor(t), args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	return cmd
}

// Umask makes cmd, not yet started, run under the umask mask (octal, as
// sh's umask reads it): sh sets it and execs the command. Go sets no umask
// per child, and the test process's own is shared by parallel tests.
func Umask(cmd *exec.Cmd, mask string) {
	cmd.Args = append([]string{"sh", "-c", "umask " + mask + ` && exec "$0" "$@"`, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/bin/sh"
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
