// Package golden compares a test's output with a file under the
// package's testdata/, or rewrites the file when the test runs with
// -update (go test ./PKG -update), for the packages whose output is text
// a reviewer reads: the mapping's errors, verify's and patterns' reports.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// Check compares got with testdata/name, or rewrites it with -update.
func Check(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file %s; run go test with -update", path)
	require.Equal(t, string(want), got, "golden file %s differs; if the change is intended, run go test with -update", path)
}
