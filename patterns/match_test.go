package patterns

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
)

const matchMapping = `
version: 1
source: {driver: postgres}
target:
  table: things
  key: {pk: PK, sk: SK}
  attribute_types: {Rank: N}
  indexes:
    ByRank: {type: global, pk: GPK, sk: Rank}
    Flat: {type: global, pk: FPK}
entities:
  e: {from: t, key: {pk: "P#${id}", sk: "S#${id}"}}
`

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// A pattern's key condition, as a test of an item, holds for exactly the
// items its query returns: the partition key (any shard), the sort-key
// condition on the pattern's table or index, Number sort keys by value,
// and never an item that lacks one of the index's key attributes.
func TestMatcher(t *testing.T) {
	cfg, err := mapping.Parse([]byte(matchMapping))
	require.NoError(t, err)
	p, err := mapping.Compile(cfg, nil, mapping.Options{})
	require.NoError(t, err)
	str := func(v string) *string { return &v }
	item := map[string]types.AttributeValue{"PK": s("P#1"), "SK": s("ORDER#0042"), "GPK": s("G#3"), "Rank": n("10"), "FPK": s("F")}
	for _, tc := range []struct {
		name string
		q    mapping.PatternQuery
		item map[string]types.AttributeValue
		want bool
	}{
		{"pk", mapping.PatternQuery{PK: "P#1"}, item, true},
		{"other pk", mapping.PatternQuery{PK: "P#2"}, item, false},
		{"begins_with", mapping.PatternQuery{PK: "P#1", SKBeginsWith: str("ORDER#")}, item, true},
		{"begins_with, not", mapping.PatternQuery{PK: "P#1", SKBeginsWith: str("LINE#")}, item, false},
		{"=", mapping.PatternQuery{PK: "P#1", SKEquals: str("ORDER#0042")}, item, true},
		{"between", mapping.PatternQuery{PK: "P#1", SKBetween: []string{"ORDER#0040", "ORDER#0050"}}, item, true},
		{"<", mapping.PatternQuery{PK: "P#1", SKLess: str("ORDER#0042")}, item, false},
		{"<=", mapping.PatternQuery{PK: "P#1", SKLessEq: str("ORDER#0042")}, item, true},
		{"shards", mapping.PatternQuery{PK: "P#${shard}", ShardRange: 3}, item, true},
		{"shards, out of range", mapping.PatternQuery{PK: "P#${shard}", ShardRange: 1}, item, false},
		{"index", mapping.PatternQuery{Index: "ByRank", PK: "G#3"}, item, true},
		{"Number sort key by value", mapping.PatternQuery{Index: "ByRank", PK: "G#3", SKGreater: str("9")}, item, true},
		{"Number sort key, not", mapping.PatternQuery{Index: "ByRank", PK: "G#3", SKGreaterEq: str("10.5")}, item, false},
		{"not in the index without its sort key", mapping.PatternQuery{Index: "ByRank", PK: "G#3"}, map[string]types.AttributeValue{"PK": s("P#1"), "SK": s("X"), "GPK": s("G#3")}, false},
		{"an index without a sort key", mapping.PatternQuery{Index: "Flat", PK: "F"}, item, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Match(p, tc.q)
			require.NoError(t, err)
			require.Equal(t, tc.want, m.Holds(tc.item))
		})
	}
	_, err = Match(p, mapping.PatternQuery{Index: "Nope", PK: "x"})
	require.Error(t, err)
}
