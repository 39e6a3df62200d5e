package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/render"
	"github.com/dynafold/dynafold/internal/testenv"
)

// ptyRun is dynafold running on a pseudo-terminal (stdout and stderr both).
type ptyRun struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func startPTY(t *testing.T, dir string, env []string, args ...string) *ptyRun {
	t.Helper()
	cmd := clitest.Command(context.Background(), t, dir, append([]string{"TERM=xterm"}, env...), args...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 220})
	require.NoError(t, err)
	p := &ptyRun{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil { // EIO once the process is gone
				return
			}
		}
	}()
	t.Cleanup(func() { f.Close() })
	return p
}

func (p *ptyRun) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// wait waits for the process and its output; returns the exit code.
func (p *ptyRun) wait(t *testing.T) int {
	t.Helper()
	err := p.cmd.Wait()
	<-p.done
	var exit *exec.ExitError
	if err != nil {
		require.ErrorAs(t, err, &exit)
		return exit.ExitCode()
	}
	return 0
}

// checkpointRows reads the rows a checkpoint file holds as written.
func checkpointRows(path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var doc struct {
		Shards []struct {
			Rows int64 `json:"rows"`
		} `json:"shards"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return 0
	}
	var n int64
	for _, s := range doc.Shards {
		n += s.Rows
	}
	return n
}

// Progress tells the truth: the bar counts rows whose items DynamoDB has
// acknowledged, not rows read; a resumed run says so at the start and its
// summary labels this run and the whole migration; an interrupted run's
// summary says what the checkpoint holds and what will be read again; a
// rerun of a completed migration says it rewrites everything. On a
// terminal the writes line shows WCU/s, throttled requests and the rate
// cap, numbers carry thousands separators, and the message printed on a
// signal goes through the display.
func TestHonestProgress(t *testing.T) {
	// Serial, as every test on a pseudo-terminal: what is drawn depends on
	// when the redraws fall, and other tests' load moves them.
	portfolios := testenv.Size(100, 300) // ten rows and items each
	rows := thousands(int64(10 * portfolios))
	d := testenv.Drivers()[0]
	dsn := d.NewDB(t)
	loadScale(t, d.Name, dsn, portfolios)
	client := testenv.DynamoClient(t)
	table := testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, client, table)
	endpoint := testenv.DynamoEndpoint(t)
	config := clitest.RepoPath("configs/portfolios.yaml")
	r := clitest.Run(t, "", nil, "table", "create", "--config", config, "--source-dsn", dsn, "--endpoint", endpoint, "--table", table)
	require.Equal(t, 0, r.Code, r.Output())
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "run.checkpoint.json")
	// 300 write units a second: several seconds for the whole run, whose
	// checkpoint moves five times a second; a signal leaves the writes in
	// flight a second, not the time they all need.
	args := []string{"migrate", "--config", config, "--source-dsn", dsn, "--endpoint", endpoint, "--table", table, "--checkpoint", ckpt, "--max-wcu", "300",
		"--checkpoint-every", "200ms", "--grace", "1s"}

	// 1. On a terminal, interrupted once the checkpoint holds some rows.
	p := startPTY(t, dir, nil, args...)
	require.Eventually(t, func() bool { return checkpointRows(ckpt) > 0 }, 2*time.Minute, 50*time.Millisecond)
	require.Eventually(t, func() bool { return strings.Contains(p.output(), "writes: ") }, time.Minute, 50*time.Millisecond)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	code := p.wait(t)
	out := p.output()
	t.Logf("terminal output, last part:\n%s", out[max(0, len(out)-3000):])
	require.Equal(t, exitInterrupted, code, out)
	require.Regexp(t, `[\d,]+/~[\d,]+ items written  [\d,]+/~[\d,]+ rows read`, out)
	require.Regexp(t, `writes: [\d,]+ WCU/s  [\d,]+ throttled requests  rate cap 300 WCU/s`, out)
	require.Regexp(t, `(?m)dynafold: interrupt: stopping; finishing writes in flight and saving the checkpoint \(again to exit at once\)\r?\n`, out,
		"the signal's message is a whole line, printed through the display")
	require.Regexp(t, `the checkpoint holds [\d,]+ rows as written; [\d,]+ rows read ahead of it were not all acknowledged and will be read again on resume`, out)
	held := checkpointRows(ckpt)
	require.Positive(t, held)
	require.Less(t, held, int64(10*portfolios))

	// 1b. Resumed on a terminal: the lines say their counts are of the
	// whole migration; interrupted again.
	p = startPTY(t, dir, nil, args...)
	require.Eventually(t, func() bool { return strings.Contains(p.output(), "rows by earlier runs)") }, time.Minute, 50*time.Millisecond)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	code = p.wait(t)
	require.Contains(t, p.output(), "dynafold: resuming run ")
	require.Regexp(t, `rows read \(whole migration, [\d,]+ rows by earlier runs\)`, p.output())
	// The label shows within a second; what is left takes several at 300
	// write units a second, so the run is still going when signalled.
	require.Equal(t, exitInterrupted, code, p.output())
	held = checkpointRows(ckpt)

	// 2. Resumed, without a terminal: announced with the counts, progress
	// as JSON lines, the summary labelled.
	r = clitest.Run(t, dir, nil, append(args, "--progress", "json", "--output", "text")...)
	require.Equal(t, 0, r.Code, r.Output())
	require.Regexp(t, `dynafold: resuming run [0-9a-f-]+ from `+regexp.QuoteMeta(ckpt)+`: `+regexp.QuoteMeta(thousands(held))+` rows of ~`+rows+` done \(saved `, r.Stderr)
	require.Contains(t, r.Stdout, "resumed from checkpoint")
	require.Contains(t, r.Stdout, "whole migration, as the checkpoint holds it: "+rows+" rows and "+rows+" items written, "+thousands(held)+" of the rows by earlier runs")
	var final map[string]any
	for _, line := range strings.Split(r.Stderr, "\n") {
		if strings.Contains(line, `"event":"progress"`) {
			require.NoError(t, json.Unmarshal([]byte(line), &final))
			for _, k := range []string{"wcu_per_second", "throttled_requests", "rate_cap_wcu"} {
				require.Contains(t, final, k, line)
			}
			for _, e := range final["entities"].([]any) {
				e := e.(map[string]any)
				require.LessOrEqual(t, e["rows_done"].(float64), e["rows_read"].(float64), "a row is done only after it is read: %s", line)
				require.LessOrEqual(t, e["items_written"].(float64), e["items_estimate"].(float64), "the bar never passes the estimate: %s", line)
			}
		}
	}
	require.NotNil(t, final)
	require.Equal(t, true, final["final"])
	require.EqualValues(t, 300, final["rate_cap_wcu"])
	var done float64
	for _, e := range final["entities"].([]any) {
		e := e.(map[string]any)
		done += e["rows_done"].(float64)
		require.EqualValues(t, 0, e["eta_seconds"])
		require.Equal(t, e["items_estimate"], e["items_written"], "at the end the bar is full, and only then")
	}
	require.EqualValues(t, 10*portfolios, done, "at the end every row is done")

	// 3. Again, after the run completed: it says it rewrites everything.
	r = clitest.Run(t, dir, nil, append(args, "--progress", "none", "--max-wcu", "0")...)
	require.Equal(t, 0, r.Code, r.Output())
	require.Regexp(t, regexp.QuoteMeta(ckpt)+` records a completed run \([0-9a-f-]+, `+rows+` rows, finished [^)]+\); migrating everything again, which rewrites every item`, r.Stderr)
	require.Regexp(t, `(?m)^\s+total\s+`+rows+`\s+`+rows+`\s+0\s+0`, r.Stdout, "thousands separators in the summary")
}

// thousands formats n as the terminal output does (checked independently
// above with literal figures).
func thousands(n int64) string { return render.Thousands(n) }

// Colour and live bars only where they belong: on a terminal, patterns
// marks results in colour unless NO_COLOR is set or TERM is dumb; with
// TERM=dumb migrate draws no bars (no cursor movement) and prints JSON
// status lines instead.
func TestNoColorAndDumbTerminal(t *testing.T) {
	// Serial: on a pseudo-terminal, as TestHonestProgress.
	d := testenv.Drivers()[0]
	tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
	require.Equal(t, 0, tg.run(t, "", "table", "create").Code)

	p := startPTY(t, "", []string{"TERM=dumb"}, append([]string{"migrate"}, tg.flags...)...)
	require.Equal(t, 0, p.wait(t), p.output())
	require.NotContains(t, p.output(), "\x1b[", "no escape sequences on a dumb terminal")
	require.Contains(t, p.output(), `"event":"progress"`)

	for _, c := range []struct {
		env   []string
		color bool
	}{
		{nil, true},
		{[]string{"NO_COLOR=1"}, false},
		{[]string{"TERM=dumb"}, false},
	} {
		p := startPTY(t, "", c.env, append([]string{"patterns"}, tg.flags...)...)
		require.Equal(t, 0, p.wait(t), p.output())
		require.Contains(t, p.output(), "OK")
		if c.color {
			require.Contains(t, p.output(), "\x1b[32mOK\x1b[0m", "%v", c.env)
		} else {
			require.NotContains(t, p.output(), "\x1b[", "%v", c.env)
		}
	}
}

// On a terminal sync's status is a line of migrate's display, under the
// load's bars and redrawn with them, not a line of its own rewritten
// beside them.
func TestSyncStatusOnATerminal(t *testing.T) {
	// Serial: on a pseudo-terminal, as TestHonestProgress.
	sd := newSyncDesign(t, testenv.Drivers()[0], "portfolios", "configs/portfolios.yaml")
	p := startPTY(t, sd.dir, nil, sd.args("sync", "--until-caught-up")...)
	require.Equal(t, 0, p.wait(t), p.output())
	out := p.output()
	bars := strings.Index(out, "items written  ")
	require.GreaterOrEqual(t, bars, 0, "the load's bars: %q", out)
	status := regexp.MustCompile(`sync: (\S+ · )*lag \d+\.\ds, [\d,.]+ (bytes|KiB|MiB|GiB) WAL · [\d,]+ changes/s`).FindStringIndex(out)
	require.NotNil(t, status, "the status line: %q", out)
	require.Less(t, bars, status[0])
	require.NotContains(t, out, "\r\x1b[K", "no line of sync's own")
}
