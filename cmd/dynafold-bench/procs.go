package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/dynafold/dynafold/internal/peakrss"
)

// measured is what one child process cost.
type measured struct {
	Wall    float64 // seconds
	CPU     float64 // user + system seconds
	PeakRSS int64   // bytes
	Stdout  string
	Stderr  string
}

// runMeasured runs a command to completion and reads its resource usage
// from the kernel, so the figures are the process's own, not the
// benchmark's: CPU from the child's rusage, peak RSS from its own VmHWM
// (the rusage's maxrss carries the benchmark's memory: see peakrss).
func runMeasured(ctx context.Context, env []string, name string, args ...string) (*measured, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	var peak int64
	err := cmd.Start()
	if err == nil {
		w := peakrss.Start(cmd.Process.Pid)
		err = cmd.Wait()
		peak = w.Stop()
	}
	m := measuredOf(cmd, start, &stdout, &stderr)
	m.PeakRSS = peak
	if err != nil {
		return m, fmt.Errorf("%s %v: %w\n%s%s", filepath.Base(name), args, err, m.Stdout, m.Stderr)
	}
	return m, nil
}

// measuredOf is what a finished command cost, its peak RSS aside.
func measuredOf(cmd *exec.Cmd, start time.Time, stdout, stderr *bytes.Buffer) *measured {
	m := &measured{Wall: time.Since(start).Seconds(), Stdout: stdout.String(), Stderr: stderr.String()}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			m.CPU = tv(ru.Utime) + tv(ru.Stime)
		}
	}
	return m
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// server is a background process the benchmark talks to.
type server struct {
	cmd *exec.Cmd
	URL string
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startServer runs name with args (where "{port}" is replaced by a free
// port) and waits until the port accepts connections.
func startServer(ctx context.Context, logPath, name string, args ...string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	for i, a := range args {
		if a == "{port}" {
			args[i] = strconv.Itoa(port)
		}
		if a == "{addr}" {
			args[i] = "127.0.0.1:" + strconv.Itoa(port)
		}
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, URL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	for i := 0; i < 150; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return s, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.stop()
	return nil, fmt.Errorf("%s did not start; see %s", name, logPath)
}

func (s *server) stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
		}
	}
}

// connectionsOpened returns how many connections the no-op endpoint at url
// has accepted so far.
func connectionsOpened(url string) (int64, error) {
	st, err := noopStats(url)
	if err != nil {
		return 0, err
	}
	return st.ConnectionsOpened, nil
}

// noopStats reads the no-op endpoint's counters.
func noopStats(url string) (*noopCounters, error) {
	resp, err := http.Get(url + "/stats")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st noopCounters
	return &st, json.NewDecoder(resp.Body).Decode(&st)
}

// noopCounters mirrors the fields of ddbnoop.Stats the benchmark uses.
type noopCounters struct {
	Items             int64 `json:"items"`
	WriteUnits        int64 `json:"write_units"`
	ThrottledRequests int64 `json:"throttled_requests"`
	UnprocessedItems  int64 `json:"unprocessed_items"`
	ConnectionsOpened int64 `json:"connections_opened"`
	Series            []struct {
		Unix       int64 `json:"unix"`
		Items      int64 `json:"items"`
		WriteUnits int64 `json:"write_units"`
	} `json:"series"`
}
