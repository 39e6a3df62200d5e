package cdc

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
)

// claim keeps one put per item key: a row that produces one key twice puts
// its last item of it, and two rows producing one key, in one slice or in
// two slices of a round, is an error naming the rows it can.
func TestClaim(t *testing.T) {
	ep := &mapping.EntityPlan{Name: "server"}
	item := func(key, typ string) mapping.Item { return mapping.Item{Key: key, PKLen: 1, Type: typ} }
	row := func(key string, items ...mapping.Item) *derived {
		return &derived{entity: ep, key: []byte(key), items: items}
	}

	r := &round{owners: map[hash128]hash128{}}
	puts, err := r.claim([]*derived{
		row("a", item("1\x00a", "first"), item("1\x00b", "other"), item("1\x00a", "last")),
		row("b", item("2\x00a", "only")),
	})
	require.NoError(t, err)
	var got []string
	for _, it := range puts {
		got = append(got, it.Key+" "+it.Type)
	}
	require.Equal(t, []string{"1\x00a last", "1\x00b other", "2\x00a only"}, got, "one put a key, in the rows' order, the row's last item of a key")

	_, err = r.claim([]*derived{row("c", item("3\x00a", "")), row("d", item("3\x00a", ""))})
	require.ErrorContains(t, err, `two rows produce the item key ("3", "a"): "entity server row c" and "entity server row d"`)

	// A key an earlier slice of the round claimed: that row is known only
	// by its hash.
	_, err = r.claim([]*derived{row("e", item("2\x00a", ""))})
	require.ErrorContains(t, err, `two rows produce the item key ("2", "a"): another row re-derived in the same round and "entity server row e"`)
}
