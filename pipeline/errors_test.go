package pipeline

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// A finished run with rejected or skipped rows says so with one error
// type, found through wrapping (incremental adds a sentence to it).
func TestRejections(t *testing.T) {
	require.NoError(t, (*Summary)(nil).Rejections())
	require.NoError(t, (&Summary{}).Rejections())

	sum := &Summary{Total: EntitySummary{Rejected: 2, Skipped: 1}}
	err := fmt.Errorf("%w; and more", sum.Rejections())
	var rejected *RejectedError
	require.True(t, errors.As(err, &rejected))
	require.Equal(t, RejectedError{Rejected: 2, Skipped: 1}, *rejected)
	require.EqualError(t, err, "finished with 2 rejected and 1 skipped rows; and more")
}
