package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// The live-sync conformance suite. Every test runs the CLI against a real
// source and dynalite, and ends the same way: once the workload stops and
// `sync --until-caught-up` exits 0, the table is item for item what a fresh
// `migrate` of the final source writes into another table, and `verify`
// exits 0. It runs against every source with a change source:
// PostgreSQL's logical replication and MariaDB's binlog. Tests of what only
// one of them has (slots, replica identities, binlog formats) take
// pgOnly or live in sync_mysql_test.go.
func syncDrivers() []testenv.Driver { return testenv.Drivers() }

// pgOnly is the PostgreSQL driver, for tests of slots and publications.
func pgOnly() []testenv.Driver { return testenv.Drivers()[:1] }

// syncDesign is a design loaded into a fresh database and table, with the
// flags every sync command of the test takes.
type syncDesign struct {
	*target
	driver, name, config string
	dir                  string
	extra                []string // --var and the like
}

func newSyncDesign(t *testing.T, d testenv.Driver, name, config string, extra ...string) *syncDesign {
	t.Helper()
	tg := newTarget(t, d, config, "testdata/"+name+"/"+d.Name+".sql")
	sd := &syncDesign{target: tg, driver: d.Name, name: name, config: config, dir: t.TempDir(), extra: extra}
	r := sd.cli(t, "table", "create")
	require.Equal(t, 0, r.Code, r.Output())
	t.Cleanup(func() { clitest.Run(t, sd.dir, nil, append([]string{"sync", "cleanup"}, sd.flags...)...) })
	return sd
}

func (sd *syncDesign) args(args ...string) []string {
	return append(append(args, sd.flags...), sd.extra...)
}

func (sd *syncDesign) cli(t *testing.T, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(t, sd.dir, nil, sd.args(args...)...)
}

// start runs `dynafold sync` in the background.
func (sd *syncDesign) start(t *testing.T, extra ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	// extra comes last so that it overrides the common flags.
	cmd := clitest.Command(context.Background(), t, sd.dir, nil, append(sd.args("sync", "--progress", "json"), extra...)...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	return cmd, out
}

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// interrupt sends SIGINT and requires the documented exit 4.
func interrupt(t *testing.T, cmd *exec.Cmd, out *syncBuffer) {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, out.String())
	require.Equal(t, 4, exit.ExitCode(), out.String())
}

// catchUp runs `sync --until-caught-up` and requires exit 0.
func (sd *syncDesign) catchUp(t *testing.T) clitest.Result {
	t.Helper()
	r := sd.cli(t, "sync", "--until-caught-up", "--progress", "none", "--log-level", "info")
	require.Equal(t, 0, r.Code, r.Output())
	require.Contains(t, r.Stdout, "caught up with")
	t.Logf("catch-up: %s", r.Output())
	return r
}

// requireConverged compares the table with a fresh migrate of the source
// as it is now, and runs verify.
func (sd *syncDesign) requireConverged(t *testing.T) {
	t.Helper()
	fresh := testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, sd.client, fresh)
	flags := []string{"--config", clitest.RepoPath(sd.config), "--source-dsn", sd.dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", fresh}
	flags = append(flags, sd.extra...)
	r := clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	want := testenv.ScanItems(t, sd.client, fresh)
	got := testenv.ScanItems(t, sd.client, sd.table)
	require.NotEmpty(t, want)
	if diff := diffLines(want, got); diff != "" {
		t.Fatalf("the synced table differs from a fresh migrate (%d items against %d):\n%s", len(got), len(want), diff)
	}
	r = sd.cli(t, "verify")
	require.Equal(t, 0, r.Code, r.Output())
}

// diffLines lists the lines only in want (-) or only in got (+), at most
// 12 of each.
func diffLines(want, got []string) string {
	in := func(s []string) map[string]bool {
		m := map[string]bool{}
		for _, l := range s {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, side := range []struct {
		lines []string
		other map[string]bool
		mark  string
	}{{want, g, "-"}, {got, w, "+"}} {
		n := 0
		for _, l := range side.lines {
			if !side.other[l] {
				if n < 12 {
					fmt.Fprintf(&b, "%s %s\n", side.mark, l)
				}
				n++
			}
		}
		if n > 12 {
			fmt.Fprintf(&b, "%s … %d more\n", side.mark, n-12)
		}
	}
	return b.String()
}

// syncCases are the designs of the conformance suite: joins (portfolios,
// with a name copied through two joins), one-to-many and many-to-many
// (telemetryhub), a where: filter (photos) and nested split aggregates
// (alleycat).
type syncCase struct {
	name, config string
	extra        []string
}

var syncCases = []syncCase{
	{"portfolios", "testdata/sync/portfolios.yaml", nil},
	{"telemetryhub", "configs/telemetryhub.yaml", nil},
	{"photos", "configs/photos.yaml", []string{"--var", "tenant=7"}},
	{"alleycat", "testdata/sync/alleycat.yaml", nil},
}

func TestSyncConverges(t *testing.T) {
	t.Parallel()
	cases := syncCases
	if !testenv.Full() {
		// The CI tier's TestSyncFuzz holds photos and alleycat, from both
		// engines, to the same oracle with some 1,250 operations each.
		cases = slices.DeleteFunc(slices.Clone(cases), func(c syncCase) bool { return c.name == "photos" || c.name == "alleycat" })
	}
	for _, d := range syncDrivers() {
		for _, c := range cases {
			t.Run(d.Name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				if c.name == "portfolios" {
					// One design per engine through a race-built CLI: the
					// engine's rounds, writers and stream in one process.
					clitest.RaceBuilt(t)
				}
				sd := newSyncDesign(t, d, c.name, c.config, c.extra...)
				rng := rand.New(rand.NewPCG(uint64(len(c.name)), 11))
				w := newWorkload(t, d.Name, sd.dsn, c.name)
				// Changes committed before sync starts, during its initial
				// load and while it streams; then the cutover.
				runWorkload(t, d.Name, sd.dsn, w, rng, 20)
				cmd, out := sd.start(t)
				runWorkload(t, d.Name, sd.dsn, w, rng, 150)
				waitFor(t, out, `"event":"sync_status"`)
				runWorkload(t, d.Name, sd.dsn, w, rng, 100)
				interrupt(t, cmd, out)
				t.Logf("background sync:\n%s", lastLines(out.String(), 3))
				runWorkload(t, d.Name, sd.dsn, w, rng, 30)
				r := sd.catchUp(t)
				t.Logf("catch-up:\n%s", r.Stdout)
				sd.requireConverged(t)
			})
		}
	}
}

// waitFor waits until out contains s (the background sync reached a state).
func waitFor(t *testing.T, out *syncBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(out.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("sync never printed %q:\n%s", s, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
