package cdc

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The retained-WAL warning is logged once per crossing of the threshold
// (--warn-retained-wal, or half of max_slot_wal_keep_size), and its end
// once when the slot is back under.
func TestRetainedWALWarnsOncePerCrossing(t *testing.T) {
	var buf bytes.Buffer
	e := &engine{log: slog.New(slog.NewTextHandler(&buf, nil)), opts: Options{WarnRetainedWAL: 1 << 30}}
	for _, kept := range []int64{10 << 20, 2 << 30, 3 << 30, 100 << 20, 200 << 20} {
		e.checkRetained(kept, -1)
	}
	require.Equal(t, 1, strings.Count(buf.String(), "retains much WAL"), buf.String())
	require.Equal(t, 1, strings.Count(buf.String(), "back under"), buf.String())

	buf.Reset()
	e.warned = false
	e.checkRetained(40<<20, 64<<20) // over half of max_slot_wal_keep_size
	require.Contains(t, buf.String(), "retains much WAL")
}
