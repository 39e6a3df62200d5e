package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// An export run again with the checkpoint of its finished run exits 0,
// says the export is complete, names the manifest and writes nothing.
// Everything else still refuses the destination (exit 2): another
// mapping, another destination holding an export, and a destination whose
// export the checkpoint does not know (replaced under another checkpoint).
func TestExportRerun(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0] // the command's logic; the engine does not matter
	tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
	changed := filepath.Join(t.TempDir(), "changed.yaml")
	data, err := os.ReadFile(clitest.RepoPath("configs/portfolios.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(changed, []byte(strings.ReplaceAll(string(data), "PortfolioName: name", "PortfolioTitle: name")), 0o644))
	// flags without --config, for the changed mapping.
	flags := append([]string(nil), tg.flags[2:]...)
	require.Equal(t, "--source-dsn", flags[0])

	for i, dest := range newExportDests(t) {
		t.Run(dest.name, func(t *testing.T) {
			dir := t.TempDir()
			ckpt := filepath.Join(dir, "a.ckpt")
			export := func(ckpt, config string, to []string, extra ...string) clitest.Result {
				args := append([]string{"export", "--progress", "none", "--checkpoint", ckpt, "--config", config}, to...)
				return clitest.Run(t, dir, testenv.S3Env(), append(append(args, extra...), flags...)...)
			}
			config := clitest.RepoPath("configs/portfolios.yaml")
			r := export(ckpt, config, dest.args)
			require.Equal(t, 0, r.Code, r.Output())
			manifest := dest.files.read("manifest.json")
			files := dest.files.list()

			r = export(ckpt, config, dest.args)
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Output(), "is already complete")
			to := strings.TrimSuffix(dest.args[1], "/")
			require.Contains(t, r.Output(), "manifest "+to+"/manifest.json")
			require.Equal(t, manifest, dest.files.read("manifest.json"), "nothing is written")
			require.Equal(t, files, dest.files.list())

			r = export(ckpt, changed, dest.args)
			require.Equal(t, exitUsage, r.Code, "another mapping: %s", r.Output())
			require.Contains(t, r.Stderr, "already holds an export")

			// Another destination, of the same kind, holds an export of its own.
			other := newExportDests(t)[i]
			r = export(filepath.Join(dir, "other.ckpt"), config, other.args, "--restart")
			require.Equal(t, 0, r.Code, r.Output())
			r = export(ckpt, config, other.args)
			require.Equal(t, exitUsage, r.Code, "another destination: %s", r.Output())
			require.Contains(t, r.Stderr, "already holds an export")

			// The export is replaced under another checkpoint: the first
			// checkpoint does not know the files there now.
			r = export(filepath.Join(dir, "b.ckpt"), config, dest.args, "--restart")
			require.Equal(t, 0, r.Code, r.Output())
			r = export(ckpt, config, dest.args)
			require.Equal(t, exitUsage, r.Code, "an export the checkpoint does not know: %s", r.Output())
			require.Contains(t, r.Stderr, "already holds an export")
		})
	}
}
