package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/docexamples"
)

// TestDocsBenchExamples holds every `dynafold-bench …` and
// `scripts/bench.sh …` line of a fenced shell block in README.md and
// docs/*.md to this command tree: the command must exist and take every
// flag given. scripts/bench.sh hands its arguments to `dynafold-bench run`.
func TestDocsBenchExamples(t *testing.T) {
	const repoRoot = "../.."
	files, err := docexamples.Files(repoRoot)
	require.NoError(t, err)
	checked := 0
	for _, file := range files {
		cmds, err := docexamples.Commands(file, "dynafold-bench", "bin/dynafold-bench", "scripts/bench.sh")
		require.NoError(t, err)
		for _, c := range cmds {
			checked++
			args := c.Words[1:]
			if c.Words[0] == "scripts/bench.sh" {
				args = append([]string{"run", "--bin", "bin", "--repo", ".", "--pg-dsn", "$DYNAFOLD_TEST_PG_DSN"}, args...)
			}
			if _, err := docexamples.Parse(rootCommand(), args); err != nil {
				name, _ := filepath.Rel(repoRoot, c.File)
				t.Errorf("%s:%d: %s\n\tdoes not parse against the dynafold-bench command tree: %v", filepath.ToSlash(name), c.Line, c.Text, err)
			}
		}
	}
	require.Greater(t, checked, 5, "dynafold-bench examples found in the docs")
}
