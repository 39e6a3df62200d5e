package main

import (
	"bytes"
	"testing"

	"github.com/spf13/viper"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/cdc"
	"github.com/dynafold/dynafold/internal/redact"
	"github.com/dynafold/dynafold/pipeline"
)

// The live display draws on the terminal itself (mpb draws only on a
// terminal's *os.File), past the redacting stderr: what enters it, the
// console's lines and sync's status line, is redacted on the way in.

const (
	unitKeyID  = "AKIAQZTWMKXHRVNSGHJK"
	unitSecret = "qZtWmKxhRvNsGhJkMnPqRsTvWxZgHjKmNpQrStVw"
)

func unitSecrets() *redact.Redactor {
	r := redact.New()
	r.AddAWS(unitKeyID, unitSecret, "")
	return r
}

func TestConsoleRedactsBeforeTheDisplay(t *testing.T) {
	line := "retrying: UnrecognizedClientException: invalid " + unitKeyID + " signed with " + unitSecret + "\n"
	want := "retrying: UnrecognizedClientException: invalid AKIA**************** signed with xxxxx\n"
	for _, throughDisplay := range []bool{false, true} {
		var base, display bytes.Buffer
		c := newConsole(&base, unitSecrets())
		restore := func() {}
		if throughDisplay {
			restore = c.through(&display)
		}
		n, err := c.Write([]byte(line))
		restore()
		require.NoError(t, err)
		require.Equal(t, len(line), n, "the caller's bytes count as written")
		require.Equal(t, want, base.String()+display.String())
	}
}

// statusDisplay records what sync's status shows.
type statusDisplay struct{ lines []string }

func (d *statusDisplay) Update(pipeline.Snapshot)     {}
func (d *statusDisplay) Close()                       {}
func (d *statusDisplay) ShowStatus(s pipeline.Status) { d.lines = append(d.lines, s.Line) }

func TestSyncStatusLineIsRedacted(t *testing.T) {
	a := &app{v: viper.New(), secrets: unitSecrets()}
	d := &statusDisplay{}
	show := a.syncStatus(d)
	show(cdc.Status{State: "reconnecting", Fault: "DynamoDB is unavailable: invalid " + unitKeyID + " signed with " + unitSecret})
	require.Len(t, d.lines, 1)
	require.Contains(t, d.lines[0], "DynamoDB is unavailable: invalid AKIA**************** signed with xxxxx · ")
}
