package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// runUmask000 runs dynafold under umask 000, so that the mode of what it
// creates comes from dynafold alone.
func runUmask000(t *testing.T, dir string, env []string, args ...string) clitest.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := clitest.Command(ctx, t, dir, env, args...)
	clitest.Umask(cmd, "000")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return clitest.Result{Code: exitOf(err), Stdout: stdout.String(), Stderr: stderr.String()}
}

// modesUnder returns the permission bits of everything under root (root
// itself left out), by path relative to root; directories end in "/".
func modesUnder(t *testing.T, root string) map[string]fs.FileMode {
	t.Helper()
	modes := map[string]fs.FileMode{}
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			rel += "/"
		}
		modes[rel] = info.Mode().Perm()
		return nil
	}))
	return modes
}

// requireOwnerOnly requires every file in modes to be 0600 and every
// directory 0700 (naming all that are not), and the names in want to be
// among them.
func requireOwnerOnly(t *testing.T, modes map[string]fs.FileMode, want ...string) {
	t.Helper()
	var names, wrong []string
	for name, mode := range modes {
		names = append(names, name)
		wantMode := fs.FileMode(0o600)
		if strings.HasSuffix(name, "/") {
			wantMode = 0o700
		}
		if mode != wantMode {
			wrong = append(wrong, fmt.Sprintf("%s is %#o, not %#o", name, mode, wantMode))
		}
	}
	sort.Strings(names)
	sort.Strings(wrong)
	t.Logf("checked: %v", names)
	require.Empty(t, wrong)
	for _, w := range want {
		require.Contains(t, modes, w)
	}
}

// Every file and directory migrate and export write (checkpoints and their
// locks, the reject file, the report, incremental state and digests,
// export's data files and manifest, the S3 spool) is readable by its owner
// only, under umask 000: they hold source rows or the positions of a run.
func TestRunFilesAreOwnerOnly(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0] // the files are written by the same code whatever the source
	// The bad-rows catalog under on_error: reject writes a reject file.
	tg := newTarget(t, d, "testdata/badrows/mapping.yaml", "testdata/badrows/"+d.Name+".sql")
	r := tg.run(t, "", "table", "create")
	require.Equal(t, exitOK, r.Code, r.Output())

	t.Run("migrate", func(t *testing.T) {
		dir := t.TempDir()
		r := runUmask000(t, dir, nil, append([]string{"migrate", "--progress", "none", "--report", "report.json"}, tg.flags...)...)
		require.Equal(t, exitRejected, r.Code, r.Output())
		requireOwnerOnly(t, modesUnder(t, dir), ".dynafold/", "report.json",
			".dynafold/"+tg.table+".checkpoint.json", ".dynafold/"+tg.table+".checkpoint.json.lock", ".dynafold/"+tg.table+".rejects.jsonl")
	})

	t.Run("migrate --incremental", func(t *testing.T) {
		tg := newTarget(t, d, "testdata/incremental/mapping.yaml", "testdata/incremental/"+d.Name+".sql")
		r := tg.run(t, "", "table", "create")
		require.Equal(t, exitOK, r.Code, r.Output())
		dir := t.TempDir()
		r = runUmask000(t, dir, nil, append([]string{"migrate", "--incremental", "--progress", "none", "--report", "report.json"}, tg.flags...)...)
		require.Equal(t, exitOK, r.Code, r.Output())
		requireOwnerOnly(t, modesUnder(t, dir), ".dynafold/", "report.json",
			".dynafold/"+tg.table+".incremental.json", ".dynafold/"+tg.table+".incremental.digests")
	})

	t.Run("export to a directory", func(t *testing.T) {
		dir := t.TempDir()
		r := runUmask000(t, dir, nil, append([]string{"export", "--progress", "none", "--report", "report.json",
			"--to", "file://" + filepath.Join(dir, "out", "export") + "/"}, tg.flags...)...)
		require.Equal(t, exitRejected, r.Code, r.Output())
		modes := modesUnder(t, dir)
		requireOwnerOnly(t, modes, ".dynafold/", "report.json", ".dynafold/"+tg.table+".rejects.jsonl",
			".dynafold/"+tg.table+".export.checkpoint.json", "out/", "out/export/", "out/export/data/", "out/export/manifest.json")
		files := 0
		for name := range modes {
			if filepath.Dir(name) == "out/export/data" {
				files++
			}
		}
		require.Positive(t, files, "data files")
	})

	// Files go to S3 through a local spool. A proxy in front of the S3
	// server slows each upload down, so that the spooled files stay long
	// enough for the test to see them.
	t.Run("export to S3", func(t *testing.T) {
		u, err := url.Parse(testenv.S3Endpoint(t))
		require.NoError(t, err)
		proxy := startProxy(t, u.Host)
		proxy.SetLatency(100 * time.Millisecond)
		bucket := testenv.NewBucket(t, testenv.S3Client(t))
		dir := t.TempDir()
		spool := filepath.Join(dir, "spool", "export")

		seen := map[string]fs.FileMode{}
		var mu sync.Mutex
		stop := make(chan struct{})
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				_ = filepath.WalkDir(filepath.Join(dir, "spool"), func(path string, d fs.DirEntry, err error) error {
					if err != nil {
						return nil // removed while walked
					}
					info, err := d.Info()
					if errors.Is(err, fs.ErrNotExist) {
						return nil
					}
					if err != nil {
						return err
					}
					rel, _ := filepath.Rel(dir, path)
					if d.IsDir() {
						rel += "/"
					}
					mu.Lock()
					seen[rel] = info.Mode().Perm()
					mu.Unlock()
					return nil
				})
			}
		}()
		r := runUmask000(t, dir, testenv.S3Env(), append([]string{"export", "--progress", "none", "--report", "report.json",
			"--to", "s3://" + bucket + "/run/", "--s3-endpoint", "http://" + proxy.Addr(), "--spool-dir", spool}, tg.flags...)...)
		close(stop)
		<-watched
		require.Equal(t, exitRejected, r.Code, r.Output())
		spooled := 0
		for name := range seen {
			if filepath.Dir(name) == "spool/export" && !strings.HasSuffix(name, "/") {
				spooled++
			}
		}
		require.Positive(t, spooled, "the test saw spooled files: %v", seen)
		requireOwnerOnly(t, seen, "spool/", "spool/export/")
		requireOwnerOnly(t, modesUnder(t, dir), ".dynafold/", "report.json", "spool/",
			".dynafold/"+tg.table+".export.checkpoint.json", ".dynafold/"+tg.table+".rejects.jsonl")
		require.NoDirExists(t, spool, "the spool is removed at the end")
	})
}
