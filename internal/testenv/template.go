package testenv

import (
	"os"
	"path/filepath"
	"syscall"
)

// template returns the directory data under a base directory named name in
// the system's temporary directory, made by make unless a run made it
// before (the file ready marks it done). It is made under a file lock, so
// that concurrent test processes make it once, and kept for later runs:
// an initdb or mariadb-install-db costs seconds a server otherwise.
func template(name, ready string, make func(base, dir string) error) (string, error) {
	base := filepath.Join(os.TempDir(), name)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	dir := filepath.Join(base, "data")
	if _, err := os.Stat(filepath.Join(dir, ready)); err == nil {
		return dir, nil
	}
	_ = os.RemoveAll(dir)
	if err := make(base, dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
