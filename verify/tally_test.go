package verify

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// With no examples wanted (verify --examples 0, and the prune of a sync's
// resnapshot) a report lists none, rather than panicking on an empty set.
func TestNoExamplesListsNone(t *testing.T) {
	s := &exampleSet{limit: 0}
	s.add(Finding{})
	require.Empty(t, s.list())
}
