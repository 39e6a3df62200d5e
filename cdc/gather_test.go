package cdc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
)

// A round gathers every transaction the stream holds, past the positions
// the source said it was idle up to between them (PostgreSQL's keepalives
// between commits that trickle in), up to a round's changes; it ends when
// the stream is empty, and keeps the idle position only when nothing
// follows it.
func TestRoundsGatherPastIdleReports(t *testing.T) {
	txn := func(end string, changes int) source.Event {
		return source.Event{Txn: &source.Txn{End: source.Position(end), Commit: time.Now(), Changes: make([]source.Change, changes)}}
	}
	idle := func(at string) source.Event { return source.Event{Idle: source.Position(at)} }
	gather := func(roundChanges int, queued ...source.Event) (batch, int) {
		events := make(chan source.Event, len(queued))
		for _, ev := range queued[1:] {
			events <- ev
		}
		l := &streamLoop{e: &engine{opts: Options{RoundChanges: roundChanges}, live: NewLive()}, events: events}
		return l.gather(queued[0]), len(events)
	}
	ends := func(b batch) (out []string) {
		for _, t := range b.txns {
			out = append(out, string(t.End))
		}
		return out
	}

	b, left := gather(100, txn("1", 1), idle("1"), txn("2", 1), idle("2"), txn("3", 1))
	require.Equal(t, []string{"1", "2", "3"}, ends(b), "idle reports between transactions end no round")
	require.Empty(t, b.idle, "transactions came after the idle reports")
	require.Zero(t, left)

	b, _ = gather(100, txn("1", 1), idle("1"))
	require.Equal(t, []string{"1"}, ends(b))
	require.Equal(t, source.Position("1"), b.idle, "the last report, with nothing after it, says the source is idle")

	b, left = gather(3, txn("1", 2), idle("1"), txn("2", 2), txn("3", 1))
	require.Equal(t, []string{"1", "2"}, ends(b), "a round ends at a round's changes")
	require.Equal(t, 1, left)

	b, left = gather(100, txn("1", 1), source.Event{Schema: &source.SchemaChange{}}, txn("2", 1))
	require.Equal(t, []string{"1"}, ends(b))
	require.NotNil(t, b.schema, "DDL ends the round")
	require.Equal(t, 1, left)
}
