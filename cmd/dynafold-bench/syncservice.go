package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dynafold/dynafold/internal/tcpproxy"
)

// reconnectResult is how long sync took to stream again after its source
// answered again: the source behind a proxy that refuses connections for
// a while (as a restarting server does), then accepts them.
type reconnectResult struct {
	Source  string    `json:"source"`
	Outage  float64   `json:"outage_seconds"`
	Trials  []float64 `json:"seconds_to_streaming"`
	Median  float64   `json:"median_seconds"`
	Maximum float64   `json:"max_seconds"`
}

// reconnect runs sync through a proxy in front of the source and cuts the
// proxy trials times for outage each: the time from the proxy accepting
// connections again to sync's /readyz answering 200 (streaming and
// connected) is one trial.
func (r *syncRun) reconnect(ctx context.Context, source string, trials int, outage time.Duration) (*reconnectResult, error) {
	host, err := dsnAddr(r.dsn)
	if err != nil {
		return nil, err
	}
	proxy, err := tcpproxy.Start(host)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	flags := r.flags()
	for i := range flags {
		if flags[i] == "--source-dsn" {
			flags[i+1] = strings.Replace(r.dsn, host, proxy.Addr(), 1)
		}
	}
	logPath := filepath.Join(r.work, "reconnect.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	// --force: the proxy's address is another source to the checkpoint's
	// fingerprint, but the same server.
	cmd := exec.CommandContext(ctx, r.dynafold, append([]string{"sync", "--progress", "none", "--metrics-addr", addr, "--force"}, flags...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ready := func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	waitReady := func() (time.Duration, error) {
		start := time.Now()
		for !ready() {
			if time.Since(start) > 2*time.Minute {
				b, _ := os.ReadFile(logPath)
				return 0, fmt.Errorf("sync is not ready again after 2 minutes:\n%s", b)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start), nil
	}
	if _, err := waitReady(); err != nil {
		return nil, err
	}
	res := &reconnectResult{Source: source, Outage: outage.Seconds()}
	for i := 0; i < trials; i++ {
		if err := proxy.Pause(); err != nil {
			return nil, err
		}
		// Sync notices at once (its connections are reset): wait until it
		// says so, then for the rest of the outage.
		for ready() {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(outage)
		if err := proxy.Resume(); err != nil {
			return nil, err
		}
		d, err := waitReady()
		if err != nil {
			return nil, err
		}
		res.Trials = append(res.Trials, d.Seconds())
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	res.Median = medianOf(res.Trials)
	for _, d := range res.Trials {
		res.Maximum = max(res.Maximum, d)
	}
	return res, nil
}

// dsnAddr is the host:port of a test DSN in either form.
func dsnAddr(dsn string) (string, error) {
	if i := strings.Index(dsn, "tcp("); i >= 0 {
		rest := dsn[i+4:]
		if j := strings.IndexByte(rest, ')'); j >= 0 {
			return rest[:j], nil
		}
	}
	if i := strings.Index(dsn, "@"); i >= 0 {
		rest := dsn[i+1:]
		if j := strings.IndexAny(rest, "/?"); j >= 0 {
			return rest[:j], nil
		}
		return rest, nil
	}
	return "", fmt.Errorf("no host:port in the source DSN")
}
