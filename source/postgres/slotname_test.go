package postgres

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A slot name folds to what PostgreSQL accepts, character for character,
// and one that cannot be used folded is refused.
func TestSlotName(t *testing.T) {
	cases := []struct {
		name, want, err string
	}{
		{name: "dynafold_portfolios", want: "dynafold_portfolios"},
		{name: "MySlot", want: "myslot"},
		{name: "my-slot.v2", want: "my_slot_v2"},
		{name: "Año 2026", want: "a_o_2026"},
		{name: "slot_$1;drop", want: "slot__1_drop"},
		{name: strings.Repeat("S", 63), want: strings.Repeat("s", 63)},
		{name: strings.Repeat("s", 64), err: `replication slot name "ssss` + `.*" is 64 characters; PostgreSQL allows at most 63`},
		{name: "", err: "a replication slot name cannot be empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := SlotName(c.name)
			if c.err != "" {
				require.Error(t, err)
				require.Regexp(t, "^"+c.err+"$", err.Error())
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
			require.Regexp(t, `^[a-z0-9_]{1,63}$`, got)
			require.Equal(t, got, FoldSlotName(got), "folding is idempotent")
		})
	}
}
