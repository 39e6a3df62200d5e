package durable

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// noUmask clears the process's umask for the test, so that a mode comes
// from the code alone (a umask of 022 would hide a 0644 as well as a
// 0600). The tests of this package do not run in parallel.
func noUmask(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
}

// entries lists a directory's names, to see that no temporary file is left.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Mode().Perm()
}

// Under umask 000, WriteFile creates the file 0600 and its missing
// directories 0700, replaces an existing file (one that was 0644 becomes
// 0600) and leaves nothing but the file in its directory.
func TestWriteFile(t *testing.T) {
	noUmask(t)
	cases := []struct {
		name string
		old  []byte // nil: no file before
		mode fs.FileMode
		data []byte
	}{
		{name: "new file", data: []byte(`{"version":1}` + "\n")},
		{name: "replaces a 0644 file", old: []byte("old content, longer than the new"), mode: 0o644, data: []byte("new")},
		{name: "replaces a 0600 file", old: []byte("old"), mode: 0o600, data: []byte("new content")},
		{name: "empty content", old: []byte("old"), mode: 0o666, data: []byte{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "a", "b")
			path := filepath.Join(dir, "state.json")
			if c.old != nil {
				require.NoError(t, os.MkdirAll(dir, 0o755))
				require.NoError(t, os.WriteFile(path, c.old, c.mode))
				require.Equal(t, c.mode, mode(t, path))
			}
			require.NoError(t, WriteFile(path, c.data))
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, c.data, got)
			require.Equal(t, FileMode, mode(t, path))
			require.Equal(t, []string{"state.json"}, entries(t, dir), "no temporary file is left")
			if c.old == nil {
				require.Equal(t, DirMode, mode(t, dir), "a directory WriteFile creates")
				require.Equal(t, DirMode, mode(t, filepath.Join(root, "a")), "and its missing parent")
			}
		})
	}
}

// A replacement streamed in pieces takes the file's place only at Commit.
func TestReplaceInPieces(t *testing.T) {
	noUmask(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "digests")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	r, err := Replace(path)
	require.NoError(t, err)
	for _, p := range []string{"one ", "two ", "three"} {
		_, err := r.Write([]byte(p))
		require.NoError(t, err)
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "old", string(got), "the old file stays until Commit")
	require.NoError(t, r.Commit())
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "one two three", string(got))
	require.Equal(t, FileMode, mode(t, path))
	require.Equal(t, []string{"digests"}, entries(t, dir))

	// A deferred Abort after Commit leaves the new file be.
	r.Abort()
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "one two three", string(got))
	require.Error(t, r.Commit(), "a replacement is committed once")
}

// A replacement that fails leaves the old file as it was and no
// temporary file.
func TestFailedReplacementKeepsTheOldFile(t *testing.T) {
	noUmask(t)
	cases := []struct {
		name string
		// run replaces path and returns the error the caller sees.
		run     func(t *testing.T, path string) error
		wantErr bool
	}{
		{name: "aborted after a partial write", run: func(t *testing.T, path string) error {
			r, err := Replace(path)
			require.NoError(t, err)
			_, err = r.Write([]byte("half of the new"))
			require.NoError(t, err)
			r.Abort()
			return nil
		}},
		{name: "committed after an abort", wantErr: true, run: func(t *testing.T, path string) error {
			r, err := Replace(path)
			require.NoError(t, err)
			_, err = r.Write([]byte("new"))
			require.NoError(t, err)
			r.Abort()
			return r.Commit()
		}},
		{name: "written after an abort", wantErr: true, run: func(t *testing.T, path string) error {
			r, err := Replace(path)
			require.NoError(t, err)
			r.Abort()
			_, err = r.Write([]byte("new"))
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "checkpoint.json")
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o640))
			err := c.run(t, path)
			if c.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			got, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			require.Equal(t, "old", string(got))
			require.Equal(t, fs.FileMode(0o640), mode(t, path), "the old file's mode too")
			require.Equal(t, []string{"checkpoint.json"}, entries(t, dir))
		})
	}

	// The rename fails (a non-empty directory is where the file goes):
	// Commit says so, and the temporary file is removed.
	t.Run("rename fails", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "report.json")
		require.NoError(t, os.Mkdir(path, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(path, "keep"), []byte("kept"), 0o644))
		require.Error(t, WriteFile(path, []byte("new")))
		require.Equal(t, []string{"report.json"}, entries(t, dir))
		require.Equal(t, []string{"keep"}, entries(t, path))
	})

	// The directory cannot be made (its parent is a file): nothing is
	// created.
	t.Run("no directory", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644))
		require.Error(t, WriteFile(filepath.Join(dir, "file", "sub", "state.json"), []byte("new")))
		require.Equal(t, []string{"file"}, entries(t, dir))
	})
}

// MkdirAll creates every missing directory 0700 under umask 000 and leaves
// the mode of one that exists.
func TestMkdirAll(t *testing.T) {
	noUmask(t)
	root := t.TempDir()
	existing := filepath.Join(root, "existing")
	require.NoError(t, os.Mkdir(existing, 0o755))
	require.NoError(t, MkdirAll(filepath.Join(existing, "a", "b")))
	require.Equal(t, fs.FileMode(0o755), mode(t, existing))
	require.Equal(t, DirMode, mode(t, filepath.Join(existing, "a")))
	require.Equal(t, DirMode, mode(t, filepath.Join(existing, "a", "b")))
}
