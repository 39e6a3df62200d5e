// Package durable writes the files dynafold keeps on local disk: a file
// is replaced in one step that a crash cannot tear (a temporary file
// beside it, fsynced, renamed over it, the directory fsynced), and every
// file and directory is its owner's alone, whatever the umask. Checkpoints,
// sync and incremental state, export files and manifests, reject files and
// reports hold source rows or the positions of a run: nothing another user
// of the host should read or replace.
package durable

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// FileMode and DirMode are the modes dynafold creates files and
// directories with. The umask can only take bits away, so a file or
// directory dynafold creates never has more than these. Files and
// directories that already exist keep their mode: the operator set it.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700
)

// MkdirAll creates dir and its missing parents with DirMode.
func MkdirAll(dir string) error { return os.MkdirAll(dir, DirMode) }

// SyncDir fsyncs a directory, which makes a rename or a removal in it
// durable: without it, a power loss can undo a rename whose file data was
// already on disk.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		// EINVAL and ENOTSUP: the file system cannot sync a directory
		// (fsync(2)); there is nothing more to make durable.
		return err
	}
	return nil
}
