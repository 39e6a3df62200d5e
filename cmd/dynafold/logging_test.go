package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/faultproxy"
	"github.com/dynafold/dynafold/internal/testenv"
)

// logLines decodes stderr as the logger writes it without a terminal: one
// JSON object per line. Progress lines (event "progress") are JSON too;
// any other line is returned in rest.
func logLines(t *testing.T, stderr string) (logs []map[string]any, rest []string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["msg"] == nil {
			rest = append(rest, line)
			continue
		}
		logs = append(logs, m)
	}
	return logs, rest
}

func messages(logs []map[string]any, level string) []string {
	var out []string
	for _, l := range logs {
		if level == "" || l["level"] == level {
			out = append(out, l["msg"].(string))
		}
	}
	return out
}

// --log-level debug logs the run's decisions and events as JSON lines on
// stderr (no terminal): the resume decision, shard starts and ends,
// checkpoint saves, retried and throttled requests and the rate cut they
// cause; info leaves out the per-request lines, and the default level
// (warn) prints none of them.
func TestLogLevels(t *testing.T) {
	t.Parallel()
	tg := newScaleTarget(t, testenv.Drivers()[0], 100) // 1,000 rows and items
	proxy, err := faultproxy.New(testenv.DynamoEndpoint(t), faultproxy.Config{Throttle: 0.3, Seed: 3})
	require.NoError(t, err)
	url, stop, err := proxy.Start()
	require.NoError(t, err)
	defer stop()

	dir := t.TempDir()
	// cuts is the rate cuts of the last run, from its report: whether the
	// adaptive rate cuts on a short run depends on timing, so the test
	// checks that every cut there was is logged.
	var cuts int64
	migrate := func(level string) ([]map[string]any, []string) {
		report := filepath.Join(dir, "report.json")
		args := append([]string{"migrate", "--progress", "none", "--restart", "--report", report}, tg.with(url)...)
		if level != "" {
			args = append(args, "--log-level", level)
		}
		r := clitest.Run(t, dir, nil, args...)
		require.Equal(t, 0, r.Code, r.Output())
		var rep struct {
			Summary struct {
				Writes struct {
					RateCuts int64 `json:"rate_cuts"`
				} `json:"writes"`
			} `json:"summary"`
		}
		b, err := os.ReadFile(report)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &rep))
		cuts = rep.Summary.Writes.RateCuts
		return logLines(t, r.Stderr)
	}
	countOf := func(msgs []string, want string) (n int64) {
		for _, m := range msgs {
			if m == want {
				n++
			}
		}
		return n
	}

	logs, rest := migrate("debug")
	require.Empty(t, rest, "every stderr line is a JSON log line")
	all := strings.Join(messages(logs, ""), "\n")
	for _, want := range []string{"starting a new run", "shard started", "shard read to its end", "shard done: every row acknowledged", "checkpoint saved", "write request retried"} {
		require.Contains(t, all, want)
	}
	// The rate is watched once a second: a cut is logged at the next look,
	// so a run may end with a cut not yet logged, but never logs one that
	// did not happen.
	require.LessOrEqual(t, countOf(messages(logs, ""), "throttled: write rate cut"), cuts)
	t.Logf("%d rate cuts at debug", cuts)
	for _, l := range logs {
		require.Contains(t, l, "time")
		for k := range l {
			require.Equal(t, strings.ToLower(k), k, "snake_case keys: %v", l)
		}
	}

	logs, _ = migrate("info")
	require.NotEmpty(t, logs)
	require.Empty(t, messages(logs, "DEBUG"))
	require.Contains(t, messages(logs, "INFO"), "starting a new run")
	require.LessOrEqual(t, countOf(messages(logs, "INFO"), "throttled: write rate cut"), cuts)
	require.NotContains(t, messages(logs, ""), "write request retried", "nothing per request at info")

	logs, rest = migrate("")
	require.Empty(t, logs, "the default level (warn) logs nothing on a run without trouble: %v", logs)
	require.Empty(t, rest)
}
