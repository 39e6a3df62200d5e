package cdc

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
)

// A round confirms the end of its last whole transaction: a piece of a
// large one (no end yet) never moves the confirmed position into it.
func TestRoundConfirmsNoPiece(t *testing.T) {
	whole := &source.Txn{End: "0/10"}
	piece := &source.Txn{Partial: true}
	last := &source.Txn{End: "0/30"}
	require.Equal(t, source.Position("0/10"), lastEnd([]*source.Txn{whole, piece}))
	require.Equal(t, source.Position(""), lastEnd([]*source.Txn{piece, piece}))
	require.Equal(t, source.Position("0/30"), lastEnd([]*source.Txn{piece, last}))
}
