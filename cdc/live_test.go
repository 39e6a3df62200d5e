package cdc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The lag is the age of the oldest change not applied; 0 once the source
// reports nothing more, even after a backlog was assumed; and it grows,
// from the last moment sync was caught up, while the stream is down.
func TestLiveLag(t *testing.T) {
	now := time.Now()
	l := NewLive()
	l.setStreaming(true)
	require.Zero(t, l.seconds(now))

	l.pending(now.Add(-10 * time.Second))
	require.InDelta(t, 10, l.seconds(now), 0.01)
	l.applied()
	require.Zero(t, l.seconds(now))

	// A backlog waits after a round: its age counts from the last commit
	// applied, until an idle report says nothing more waits.
	l.pending(now.Add(-60 * time.Second))
	require.InDelta(t, 60, l.seconds(now), 0.01)
	l.caughtUp(now)
	require.Zero(t, l.seconds(now), "an idle source clears the assumed backlog")

	l.setStreaming(false)
	require.InDelta(t, 30, l.seconds(time.Now().Add(30*time.Second)), 1, "the lag grows while the stream is down")
}
