package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/dynafold/dynafold/internal/durable"
)

// LockedError is returned by Lock when another process holds the lock.
type LockedError struct {
	Path string // the checkpoint
	PID  int    // the holder, 0 when it could not be read
}

func (e *LockedError) Error() string {
	who := "another dynafold process"
	stop := "stop it"
	if e.PID > 0 {
		who = fmt.Sprintf("another dynafold process (pid %d)", e.PID)
		stop = fmt.Sprintf("stop it (kill -INT %d saves its checkpoint)", e.PID)
	}
	return fmt.Sprintf("checkpoint %s is in use by %s; wait for that run to finish or %s and run again to resume, or give this run its own --checkpoint", e.Path, who, stop)
}

// Lock takes an exclusive lock on the checkpoint at path for as long as the
// run lasts, so that two runs never overwrite each other's positions. The
// lock is an flock(2) on path+".lock", which holds the owner's PID; the
// kernel releases it when the process ends, however it ends, so a killed
// run never leaves a stale lock. A second Lock while it is held fails at
// once with a *LockedError.
func Lock(path string) (release func(), err error) {
	lockPath := path + ".lock"
	if err := durable.MkdirAll(filepath.Dir(lockPath)); err != nil {
		return nil, fmt.Errorf("locking checkpoint %s: %w", path, err)
	}
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, durable.FileMode)
	if err != nil {
		return nil, fmt.Errorf("locking checkpoint %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			data, _ := os.ReadFile(lockPath)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
			return nil, &LockedError{Path: path, PID: pid}
		}
		return nil, fmt.Errorf("locking checkpoint %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		// Empty the file before unlocking, so that a reader never takes a
		// finished run's PID for a live one.
		_ = f.Truncate(0)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
