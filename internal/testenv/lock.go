package testenv

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Tests of several packages run at once against one server: each test
// has its own database, but a few change the server itself (SET GLOBAL,
// PURGE BINARY LOGS). Those take the server's lock exclusively
// (LockServer); every other test of that server takes it shared, when it
// creates its database. The lock is a file lock, so it holds across the
// test processes of one `go test` run and of concurrent ones.

// exclusive holds the names of this process's tests that hold a server's
// lock exclusively: their own databases must not wait for themselves.
var exclusive sync.Map

// LockServer gives t the driver's server to itself until it ends: no test
// of any package that uses the server runs meanwhile. Call it before
// anything that creates a database.
func LockServer(t testing.TB, driver string) {
	t.Helper()
	lockServer(t, driver, syscall.LOCK_EX)
	key := driver + "\x00" + t.Name()
	exclusive.Store(key, true)
	t.Cleanup(func() { exclusive.Delete(key) })
}

// ShareServer holds the driver's server shared until t ends, for a test
// whose databases are created by code that takes no testing.TB (the sync
// fuzzer's).
func ShareServer(t testing.TB, driver string) { shareServer(t, driver) }

// shareServer holds the driver's server shared until t ends, unless t (or
// a parent) holds it exclusively.
func shareServer(t testing.TB, driver string) {
	t.Helper()
	for name := t.Name(); ; {
		if _, ok := exclusive.Load(driver + "\x00" + name); ok {
			return
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			break
		}
		name = name[:i]
	}
	lockServer(t, driver, syscall.LOCK_SH)
}

func lockServer(t testing.TB, driver string, how int) {
	t.Helper()
	path := lockPath(driver)
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("opening the server lock %s: %v", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		t.Fatalf("taking the server lock %s: %v", path, err)
	}
	// Closing the file releases the lock.
	t.Cleanup(func() { f.Close() })
}

// lockPath names the lock of the server the driver's variable points at,
// so that runs against different servers do not wait for each other.
func lockPath(driver string) string {
	addr := os.Getenv(map[string]string{"postgres": "DYNAFOLD_TEST_PG_DSN", "mysql": "DYNAFOLD_TEST_MYSQL_DSN"}[driver])
	if m := regexp.MustCompile(`[\w.-]+:\d+`).FindString(addr); m != "" {
		addr = m
	}
	slug := regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(addr, "_")
	return filepath.Join(os.TempDir(), "dynafold-test-locks", driver+"-"+slug+".lock")
}
