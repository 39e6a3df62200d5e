package syncfuzz

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The oracle reports items missing, extra and different, and names an
// extra item whose key an earlier check saw deleted as resurrected; a key
// the source makes again is not.
func TestOracleFindsEveryKindOfDivergence(t *testing.T) {
	o := &oracle{gone: map[string]bool{}}
	d := o.compare(map[string]string{"a": "A", "b": "B", "c": "C"}, map[string]string{"a": "A", "b": "B", "c": "C"})
	require.True(t, d.empty())

	// b is deleted at the source, and sync deletes it.
	d = o.compare(map[string]string{"a": "A", "c": "C"}, map[string]string{"a": "A", "c": "C"})
	require.True(t, d.empty())

	// Later b is back in the synced table though the source has no row
	// for it, c differs, and d is missing.
	d = o.compare(map[string]string{"a": "A", "c": "C", "d": "D"}, map[string]string{"a": "A", "b": "B", "c": "C2"})
	require.False(t, d.empty())
	require.Equal(t, 1, d.MissingCount)
	require.Equal(t, []string{"D"}, d.Missing)
	require.Equal(t, 1, d.ExtraCount)
	require.Equal(t, []string{"b"}, d.Resurrected)
	require.Equal(t, 1, d.DifferentCount)
	require.Contains(t, d.String(), "resurrected: b")

	// The source makes b again: it is no longer a resurrection.
	d = o.compare(map[string]string{"a": "A", "b": "B"}, map[string]string{"a": "A", "b": "B"})
	require.True(t, d.empty())
	require.False(t, o.gone["b"])
}

// Only verify's "differences found" is a divergence; verify failing to
// check at all is the harness's error, and exit 0 adds nothing.
func TestVerifyOutcome(t *testing.T) {
	out, err := verifyOutcome(0, "ok")
	require.NoError(t, err)
	assert.Empty(t, out)

	out, err = verifyOutcome(verifyDifferences, "1 item differs: PK=P#1")
	require.NoError(t, err)
	assert.Contains(t, out, "PK=P#1")

	out, err = verifyOutcome(1, "connection refused")
	require.ErrorContains(t, err, "exit 1")
	require.ErrorContains(t, err, "connection refused")
	assert.Empty(t, out)
}
