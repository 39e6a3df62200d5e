package durable

import (
	"os"
	"path/filepath"
)

// WriteFile replaces path with data durably, creating its directory
// (DirMode) when missing. A crash at any instant leaves the old content or
// the new, never a torn file, and the file has FileMode afterwards even if
// the old one had more.
func WriteFile(path string, data []byte) error {
	r, err := Replace(path)
	if err != nil {
		return err
	}
	if _, err := r.Write(data); err != nil {
		r.Abort()
		return err
	}
	return r.Commit()
}

// Replacement is a new content of a file, written in pieces (a stream too
// large to hold) before it takes the file's place. Until Commit returns,
// the file at its path is the old one.
type Replacement struct {
	path string
	tmp  *os.File
	err  error // the first error; Commit returns it
	done bool  // committed or aborted: the temporary file is gone
}

// Replace starts a replacement of path: a temporary file (FileMode) in the
// same directory, so that the final rename never crosses file systems.
func Replace(path string) (*Replacement, error) {
	dir := filepath.Dir(path)
	if err := MkdirAll(dir); err != nil {
		return nil, err
	}
	// CreateTemp makes the file 0600 and fails rather than open one that
	// exists: nothing else can be holding it.
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, err
	}
	return &Replacement{path: path, tmp: tmp}, nil
}

// Write appends p to the new content.
func (r *Replacement) Write(p []byte) (int, error) {
	if r.done {
		return 0, os.ErrClosed
	}
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.tmp.Write(p)
	r.err = err
	return n, err
}

// Commit makes the new content durable and puts it in place: fsync, close,
// rename over the path, fsync of the directory. After an error the old
// file is as it was and the temporary file is gone. A replacement is
// committed or aborted once.
func (r *Replacement) Commit() error {
	if r.done {
		return os.ErrClosed
	}
	r.done = true
	err := r.err
	if err == nil {
		err = r.tmp.Sync()
	}
	if cerr := r.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(r.tmp.Name(), r.path)
	}
	if err != nil {
		_ = os.Remove(r.tmp.Name())
		return err
	}
	return SyncDir(filepath.Dir(r.path))
}

// Abort drops the new content; the old file stays. After Commit it does
// nothing, so that a deferred Abort is safe.
func (r *Replacement) Abort() {
	if r.done {
		return
	}
	r.done = true
	r.tmp.Close()
	_ = os.Remove(r.tmp.Name())
}
