package incremental

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSubtract(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"2025-01-01 01:00:00+00", "2025-01-01 00:55:00+00:00"},                  // PostgreSQL timestamptz
		{"2025-01-01 01:00:00.123456+05:30", "2025-01-01 00:55:00.123456+05:30"}, // another session zone
		{"2025-01-01 01:00:00.5", "2025-01-01 00:55:00.5"},                       // timestamp, DATETIME(1)
		{"2025-01-01 01:00:00.000000", "2025-01-01 00:55:00"},                    // DATETIME(6)
		{"2025-01-01 01:00:00", "2025-01-01 00:55:00"},                           // DATETIME
		{"2025-01-01", "2024-12-31 23:55:00"},                                    // DATE
	} {
		got, err := Subtract(tc.in, 5*time.Minute)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	_, err := Subtract("42", time.Minute)
	require.ErrorContains(t, err, `watermark "42" is not a timestamp`)
}

func TestStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := PathFor(filepath.Join(dir, "t.checkpoint.json"))
	require.Equal(t, filepath.Join(dir, "t.incremental.json"), path)
	require.Equal(t, filepath.Join(dir, "t.incremental.changes.checkpoint.json"), CheckpointFor(path, "changes"))
	s, err := Load(path)
	require.NoError(t, err)
	require.Nil(t, s)
	require.NoError(t, Save(path, &State{Fingerprint: "f", Watermarks: map[string]string{"servers": "2025-01-01 00:00:00+00"}}))
	s, err = Load(path)
	require.NoError(t, err)
	require.Equal(t, "2025-01-01 00:00:00+00", s.Watermarks["servers"])
}
