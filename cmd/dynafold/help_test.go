package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
)

// Every command's help has Example: lines, the exit codes and the
// DYNAFOLD_* variable of each of its flags (DYNAFOLD_CONFIG and, for
// migrate, DYNAFOLD_MAX_WCU among them).
func TestHelpTeaches(t *testing.T) {
	t.Parallel()
	for _, cmd := range [][]string{
		{}, {"table"}, {"table", "create"}, {"plan"}, {"migrate"}, {"diff"}, {"verify"}, {"patterns"}, {"dump"}, {"version"},
		{"design"}, {"design", "workbench"}, {"design", "cloudformation"}, {"design", "cdk"}, {"design", "terraform"}, {"design", "html"},
	} {
		name := strings.Join(append([]string{"dynafold"}, cmd...), " ")
		t.Run(name, func(t *testing.T) {
			r := clitest.Run(t, "", nil, append(cmd, "--help")...)
			require.Equal(t, 0, r.Code, r.Output())
			out := r.Stdout
			require.Regexp(t, `(?m)^Examples:\n  dynafold `, out)
			for _, code := range []string{"0  success", "1  failure", "2  invalid usage", "3  differences found", "4  interrupted", "5  finished, but"} {
				require.Contains(t, out, "\n  "+code)
			}
			require.Contains(t, out, "Environment:")
			require.Contains(t, out, "DYNAFOLD_CONFIG")
			require.Contains(t, out, "DYNAFOLD_LOG_LEVEL")
			require.Contains(t, out, "AWS_MAX_ATTEMPTS")
			require.Contains(t, out, "NO_COLOR")
		})
	}
	r := clitest.Run(t, "", nil, "migrate", "--help")
	require.Contains(t, r.Stdout, "DYNAFOLD_MAX_WCU")
	require.Contains(t, r.Stdout, "DYNAFOLD_CHECKPOINT")
}

// The variables the help lists do work: DYNAFOLD_CONFIG stands for
// --config and DYNAFOLD_MAX_WCU for --max-wcu (a negative value is refused
// as the flag's would be, before anything is opened).
func TestEnvironmentStandsForFlags(t *testing.T) {
	t.Parallel()
	config := clitest.RepoPath("configs/portfolios.yaml")
	r := clitest.Run(t, "", []string{"DYNAFOLD_CONFIG=" + config, "DYNAFOLD_MAX_WCU=-5"}, "migrate")
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "--max-wcu must not be negative, not -5")
	r = clitest.Run(t, "", []string{"DYNAFOLD_CONFIG=/nonexistent/mapping.yaml"}, "plan", "--no-target")
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "/nonexistent/mapping.yaml")
}

// dynafold version and --version print the module version and the VCS
// revision from debug.ReadBuildInfo. The binary is built here with VCS
// stamping on (go build leaves it out when GOFLAGS says -buildvcs=false, or
// when it cannot read the repository, as in a git worktree): the revision
// is checked when the toolchain recorded one, and the honest "unknown"
// otherwise.
func TestVersion(t *testing.T) {
	t.Parallel()
	// The binary the tests run is built with -buildvcs=auto (by
	// scripts/test.sh or clitest): what it records is what it must print.
	bin := clitest.Binary(t)
	meta, err := exec.Command("go", "version", "-m", bin).Output()
	require.NoError(t, err)
	rev := regexp.MustCompile(`(?m)^\s+build\s+vcs\.revision=([0-9a-f]+)$`).FindSubmatch(meta)

	for _, args := range [][]string{{"version"}, {"--version"}} {
		cmd := exec.Command(bin, args...)
		got, err := cmd.Output()
		require.NoError(t, err, strings.Join(args, " "))
		line := string(got)
		require.Regexp(t, `^dynafold \S+, `, line)
		require.Contains(t, line, "go1.")
		if rev != nil {
			require.Contains(t, line, "revision "+string(rev[1]))
		} else {
			t.Log("the toolchain recorded no VCS revision here; checking the fallback")
			require.Contains(t, line, "revision unknown (built without VCS information)")
		}
	}
}

// An --output a command cannot produce is refused (exit 2) before anything
// is opened, instead of being ignored.
func TestOutputACommandCannotProduce(t *testing.T) {
	t.Parallel()
	config := clitest.RepoPath("configs/portfolios.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dump", "--config", config, "--output", "markdown"}, "--output markdown: dynafold dump cannot produce markdown; it can produce text or json"},
		{[]string{"table", "create", "--config", config, "-o", "markdown"}, "--output markdown: dynafold table create cannot produce markdown; it can produce text or json"},
		{[]string{"version", "--output", "json"}, "--output json: dynafold version cannot produce json; it can produce text"},
	} {
		r := clitest.Run(t, "", nil, c.args...)
		require.Equal(t, exitUsage, r.Code, r.Output())
		require.Equal(t, "dynafold: "+c.want+"\n", r.Stderr)
	}
}
