package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// events is a run of two packages: p/a passes (one test, one subtest), p/b
// fails one test in a subtest and has a test that never ends (a timeout).
const events = `{"Action":"start","Package":"example.com/p/a"}
{"Action":"run","Package":"example.com/p/a","Test":"TestQuick"}
{"Action":"output","Package":"example.com/p/a","Test":"TestQuick","Output":"=== RUN   TestQuick\n"}
{"Action":"output","Package":"example.com/p/a","Test":"TestQuick/sub","Output":"quick sub says hello\n"}
{"Action":"pass","Package":"example.com/p/a","Test":"TestQuick/sub","Elapsed":0.5}
{"Action":"pass","Package":"example.com/p/a","Test":"TestQuick","Elapsed":0.7}
{"Action":"output","Package":"example.com/p/a","Output":"PASS\n"}
{"Action":"pass","Package":"example.com/p/a","Elapsed":1.2}
not an event: go vet says something
{"Action":"output","Package":"example.com/p/b","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}
{"Action":"output","Package":"example.com/p/b","Test":"TestBroken/case","Output":"    broken_test.go:9: want 1, got 2\n"}
{"Action":"fail","Package":"example.com/p/b","Test":"TestBroken/case","Elapsed":3}
{"Action":"output","Package":"example.com/p/b","Test":"TestBroken","Output":"--- FAIL: TestBroken (3.00s)\n"}
{"Action":"fail","Package":"example.com/p/b","Test":"TestBroken","Elapsed":3}
{"Action":"pass","Package":"example.com/p/b","Test":"TestSlow","Elapsed":42}
{"Action":"output","Package":"example.com/p/b","Test":"TestHangs","Output":"hangs: waiting\n"}
{"Action":"output","Package":"example.com/p/b","Output":"panic: test timed out after 1m0s\n"}
{"Action":"output","Package":"example.com/p/b","Output":"FAIL\texample.com/p/b\t60.0s\n"}
{"Action":"fail","Package":"example.com/p/b","Elapsed":60}
`

func TestStreamPrintsFailuresAndPackageLines(t *testing.T) {
	var keep, out bytes.Buffer
	failed, err := stream(strings.NewReader(events), &keep, &out)
	require.NoError(t, err)
	require.True(t, failed)
	log := out.String()
	require.Contains(t, log, "ok  \texample.com/p/a\t1.200s\n")
	require.NotContains(t, log, "quick sub says hello", "a passing test's output is not printed")
	require.Contains(t, log, "not an event: go vet says something\n")
	require.Contains(t, log, "=== RUN   TestBroken\n    broken_test.go:9: want 1, got 2\n--- FAIL: TestBroken (3.00s)\n", "a failed test is printed with its subtests, in the order of their lines")
	require.Contains(t, log, "--- unfinished: TestHangs\nhangs: waiting\n", "a test that never ended is printed")
	require.Contains(t, log, "panic: test timed out after 1m0s\n")
	require.Equal(t, 1, strings.Count(log, "FAIL\texample.com/p/b"), log)
	require.Equal(t, strings.Count(events, "\n")-1, strings.Count(keep.String(), "\n"), "every event is kept, nothing else")
}

func TestSlowestOrdersTopLevelTests(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	require.NoError(t, os.WriteFile(path, []byte(events), 0o644))
	var out bytes.Buffer
	require.NoError(t, printSlowest(&out, 2, []string{path}))
	require.Equal(t, `the 2 slowest tests of 3:
    42.0s  pass  example.com/p/b  TestSlow
     3.0s  fail  example.com/p/b  TestBroken
packages by time:
    60.0s  fail  example.com/p/b
     1.2s  pass  example.com/p/a
`, out.String())
}
