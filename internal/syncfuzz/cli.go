package syncfuzz

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dynafold/dynafold/internal/peakrss"
)

// cli runs dynafold as an operator does: sync in the background, and
// migrate, verify and the catch-up in the foreground, all with the same
// flags.
type cli struct {
	bin   string
	dir   string // sync's working directory: its state lives there
	flags []string
	// syncFlags are the flags of sync's commands: flags, with --endpoint
	// through the fault proxy when DynamoDB faults are injected.
	syncFlags []string
	env       []string
	// timeout bounds one foreground command (commandTimeout).
	timeout time.Duration
	// syncRSS is the largest peak RSS of a sync process so far, in bytes.
	syncRSS atomic.Int64
}

// noteRSS records a finished sync process's peak RSS, in bytes, read
// from the process itself while it ran (peakrss: the rusage's maxrss
// would carry the fuzzer's own memory, its oracle's items included).
func (c *cli) noteRSS(rss int64) {
	for {
		cur := c.syncRSS.Load()
		if rss <= cur || c.syncRSS.CompareAndSwap(cur, rss) {
			return
		}
	}
}

// wait waits for cmd, started, and notes its peak RSS when it is a sync.
func (c *cli) wait(cmd *exec.Cmd, sync bool) error {
	w := peakrss.Start(cmd.Process.Pid)
	err := cmd.Wait()
	if peak := w.Stop(); sync {
		c.noteRSS(peak)
	}
	return err
}

func (c *cli) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = c.dir
	cmd.Env = c.env
	return cmd
}

// commandTimeout is how long one foreground command may take: 10 minutes,
// and for a run with a big transaction two seconds more per 1,000 of
// its rows. Catching up with it, migrating afresh and comparing write and
// scan every row's items in DynamoDB (dynalite, one Node process), and
// the fuzz's big transaction re-derives every row more than once (its
// portfolios fan out to the servers and databases inserted with them): a
// 200,000-row one took 170 s to catch up with on a machine shared with
// another fuzz run, and a 1,000,000-row one outgrew a flat 10 minutes.
func commandTimeout(bigTxn int) time.Duration {
	return 10*time.Minute + time.Duration(bigTxn)*2*time.Millisecond
}

// run runs one command to its end and returns its exit code and output.
func (c *cli) run(ctx context.Context, args ...string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(c.timeout, 10*time.Minute))
	defer cancel()
	flags := c.flags
	if args[0] == "sync" && c.syncFlags != nil {
		flags = c.syncFlags
	}
	cmd := c.command(ctx, append(args, flags...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Start()
	if err == nil {
		err = c.wait(cmd, args[0] == "sync")
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), nil
	}
	if err != nil {
		return -1, out.String(), fmt.Errorf("running dynafold %s: %w", args[0], err)
	}
	return 0, out.String(), nil
}

// must runs a command that has to exit 0.
func (c *cli) must(ctx context.Context, args ...string) (string, error) {
	code, out, err := c.run(ctx, args...)
	if err != nil {
		return out, err
	}
	if code != 0 {
		return out, fmt.Errorf("dynafold %s exited %d:\n%s", strings.Join(args, " "), code, tail(out, 20))
	}
	return out, nil
}

// background is a `dynafold sync` running while the fuzzer commits.
type background struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	err  error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (c *cli) startSync(extra ...string) (*background, error) {
	flags := c.flags
	if c.syncFlags != nil {
		flags = c.syncFlags
	}
	args := append(append([]string{"sync", "--progress", "json", "--log-level", "info"}, extra...), flags...)
	bg := &background{cmd: c.command(context.Background(), args...), out: &lockedBuffer{}, done: make(chan struct{})}
	bg.cmd.Stdout, bg.cmd.Stderr = bg.out, bg.out
	if err := bg.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		bg.err = c.wait(bg.cmd, true)
		close(bg.done)
	}()
	return bg, nil
}

// exited reports whether sync ended on its own, which it must not.
// awaitStreaming waits until sync reports that it streams (its initial
// load done), or has ended (which the caller reports).
func (bg *background) awaitStreaming() error {
	for deadline := time.Now().Add(5 * time.Minute); !strings.Contains(bg.out.String(), `"state":"streaming"`) && !bg.exited(); {
		if time.Now().After(deadline) {
			return fmt.Errorf("sync did not start streaming within 5 minutes:\n%s", tail(bg.out.String(), 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

func (bg *background) exited() bool {
	select {
	case <-bg.done:
		return true
	default:
		return false
	}
}

// stop interrupts sync and requires the documented exit 4 of a stop by
// signal.
func (bg *background) stop() error {
	if bg.exited() {
		return fmt.Errorf("sync ended on its own (%v):\n%s", bg.err, tail(bg.out.String(), 20))
	}
	// A SIGINT before the process has set up its signal handling (a stop
	// right after a kill's restart) ends it by the signal's default
	// action, before it ran any code of ours: wait for its first log line,
	// written after handleSignals.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(bg.out.String(), `"msg":"sync starting"`) && !bg.exited() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	_ = bg.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-bg.done:
	case <-time.After(2 * time.Minute):
		_ = bg.cmd.Process.Kill()
		<-bg.done
		return fmt.Errorf("sync did not stop within 2 minutes of SIGINT:\n%s", tail(bg.out.String(), 20))
	}
	var exit *exec.ExitError
	if !errors.As(bg.err, &exit) || exit.ExitCode() != 4 {
		return fmt.Errorf("sync stopped by SIGINT ended with %v, not exit 4:\n%s", bg.err, tail(bg.out.String(), 20))
	}
	return nil
}

// kill ends sync with SIGKILL, as a crash or an OOM kill would.
func (bg *background) kill() {
	if !bg.exited() {
		_ = bg.cmd.Process.Kill()
	}
	<-bg.done
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// environment is the process environment for dynafold: the caller's,
// without DYNAFOLD_ settings, with dummy credentials for a local endpoint.
func environment() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DYNAFOLD_") && !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return append(env, "AWS_ACCESS_KEY_ID=fuzz", "AWS_SECRET_ACCESS_KEY=fuzz", "AWS_REGION=us-east-1")
}
