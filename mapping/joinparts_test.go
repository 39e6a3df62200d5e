package mapping

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/value"
)

// A query's answer holding a split item's head and parts is joined back
// into the item the mapping built before it split it, whatever the order
// of the answer; a part without its head in the answer, and an answer
// with no parts, stay as they are.
func TestJoinParts(t *testing.T) {
	const nest = `
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        order_by: [second]
        attributes: {s: second, c: cadence, o: output}
`
	split := nestMapping(t, nest+"        max_bytes: 2000\n        overflow: split\n")
	whole := nestMapping(t, nest)
	row := value.Row{value.IntValue(7), value.IntValue(1), value.IntValue(12345)}
	build := func(p *Plan, row value.Row, n int) []map[string]types.AttributeValue {
		items, err := p.Entity("result").BuildNested(row, [][]value.Row{readings(n)}, nil, nil)
		require.NoError(t, err)
		var out []map[string]types.AttributeValue
		for _, it := range items {
			out = append(out, it.Attrs)
		}
		return out
	}
	built := build(split, row, 3600)
	require.Greater(t, len(built), 3, "the readings split")
	// As a begins_with query answers: the head, then its parts in order;
	// then a result of another race that did not split.
	head, parts := built[len(built)-1], built[:len(built)-1]
	other := build(split, value.Row{value.IntValue(8), value.IntValue(1), value.IntValue(99)}, 3)
	ascending := append(append([]map[string]types.AttributeValue{head}, parts...), other...)
	want := []map[string]types.AttributeValue{build(whole, row, 3600)[0], other[0]}
	want[0]["_type"] = head["_type"]

	t.Run("ascending", func(t *testing.T) {
		require.Equal(t, want, split.JoinParts(ascending))
		require.NotContains(t, head, "Readings", "the answer's head is not changed")
	})
	t.Run("descending", func(t *testing.T) {
		desc := slices.Clone(ascending)
		slices.Reverse(desc)
		got := split.JoinParts(desc)
		slices.Reverse(got)
		require.Equal(t, want, got)
	})
	t.Run("a part without its head", func(t *testing.T) {
		answer := slices.Clone(ascending[1:])
		require.Equal(t, answer, split.JoinParts(answer))
	})
	t.Run("no split in the mapping", func(t *testing.T) {
		require.Equal(t, ascending, whole.JoinParts(ascending))
	})
}
