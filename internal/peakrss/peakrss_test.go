package peakrss

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A child of a parent that holds far more memory than the child uses is
// measured at the child's size: its rusage says the parent's.
func TestWatchMeasuresTheChildNotItsParent(t *testing.T) {
	held := make([]byte, 300<<20)
	for i := range held {
		held[i] = 1
	}
	cmd := exec.Command("/bin/sleep", "0.3")
	require.NoError(t, cmd.Start())
	w := Start(cmd.Process.Pid)
	require.NoError(t, cmd.Wait())
	peak := w.Stop()
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	t.Logf("sleep: VmHWM %d kB, ru_maxrss %d kB, parent holds %d MB", peak>>10, ru.Maxrss, len(held)>>20)
	require.Positive(t, peak)
	require.Less(t, peak, int64(50<<20), "sleep itself is a few MB")
	require.Greater(t, ru.Maxrss*1024, int64(len(held)), "the rusage carries the parent's memory")
	runtime.KeepAlive(held)
}
