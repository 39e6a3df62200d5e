package pipeline

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
)

// sync's status goes through the displays migrate's progress uses: JSON
// lines gated by their own interval, the first and the last always shown.
func TestJSONProgressShowsStatusLines(t *testing.T) {
	var buf bytes.Buffer
	j := NewJSONProgress(&buf, time.Hour)
	line := func(n int, last bool) Status {
		return Status{Line: "unused", JSON: map[string]any{"event": "sync_status", "n": n}, Last: last}
	}
	j.ShowStatus(line(1, false)) // the first: at once
	j.ShowStatus(line(2, false)) // within the interval: left out
	j.ShowStatus(line(3, true))  // the last: always
	require.Equal(t, "{\"event\":\"sync_status\",\"n\":1}\n{\"event\":\"sync_status\",\"n\":3}\n", buf.String())

	buf.Reset()
	j.StatusEvery(0)
	j.ShowStatus(line(4, false))
	require.Equal(t, "{\"event\":\"sync_status\",\"n\":4}\n", buf.String())
}

// On a terminal the status is a line under the bars, redrawn in place.
func TestTerminalProgressShowsTheStatusLine(t *testing.T) {
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: 200}))
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(ptmx) // until tty is closed
		read <- string(b)
	}()
	tp := NewTerminalProgress(tty)
	tp.Update(Snapshot{Final: true, Entities: []EntityProgress{{Entity: "orders", ItemsWritten: 3, ItemsEstimate: 3, ETA: 0}}})
	tp.ShowStatus(Status{Line: "sync: lag 0.0s, 0 bytes WAL"})
	tp.ShowStatus(Status{Line: "sync: lag 1.5s, 12.0 KiB WAL"})
	tp.Close()
	require.NoError(t, tty.Close())
	out := <-read
	require.Contains(t, out, "orders")
	require.Contains(t, out, "sync: lag 1.5s, 12.0 KiB WAL")
	require.Less(t, strings.Index(out, "orders"), strings.LastIndex(out, "sync: lag 1.5s"), "the status line is under the bars")
}
