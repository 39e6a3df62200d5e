// Package peakrss measures the peak resident set size of a child
// process.
//
// The rusage a parent gets from wait4 cannot: Go starts a child with
// clone(CLONE_VM|CLONE_VFORK), so the child runs in the parent's memory
// until it execs, and Linux carries that memory's high-water mark into
// the child's ru_maxrss. A parent holding 500 MB made /bin/sleep report
// 503 MB, and the sync fuzzer, whose oracle holds every item it compares,
// reported its own 1.2 to 1.9 GB as sync's peak. VmHWM in /proc/PID/status
// is the high-water mark of the child's own memory, from its exec on: it
// is read every interval while the child runs, and the last read is the
// figure (growth in the child's last interval before it exits is missed).
package peakrss

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// interval is how often VmHWM is read.
const interval = 20 * time.Millisecond

// Watch reads a running process's VmHWM until stopped.
type Watch struct {
	peak atomic.Int64
	stop chan struct{}
	done chan struct{}
}

// Start watches the process pid; call Stop once it has exited.
func Start(pid int) *Watch {
	w := &Watch{stop: make(chan struct{}), done: make(chan struct{})}
	path := fmt.Sprintf("/proc/%d/status", pid)
	w.read(path)
	go func() {
		defer close(w.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.read(path)
			}
		}
	}()
	return w
}

// Stop ends the watch and returns the peak seen, in bytes (0 if none was
// read).
func (w *Watch) Stop() int64 {
	close(w.stop)
	<-w.done
	return w.peak.Load()
}

// read records the process's VmHWM; a process that has exited (or is a
// zombie, whose memory is gone) has none, and the last read stands.
func (w *Watch) read(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err == nil && kb*1024 > w.peak.Load() {
			w.peak.Store(kb * 1024)
		}
		return
	}
}
