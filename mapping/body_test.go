package mapping

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/ddbjson"
	"github.com/dynafold/dynafold/value"
)

// TestArenaBuildEncodesBody: a build with an arena (the migrate hot path)
// leaves each item's DynamoDB JSON in Body and no Attrs, the encoding of
// what a build without one leaves in Attrs; Attributes reads it back, and
// KeyAttributes makes its key from Key.
func TestArenaBuildEncodesBody(t *testing.T) {
	cfg, err := Parse([]byte(portfolioMapping))
	require.NoError(t, err)
	p, err := Compile(cfg, portfolioSchema(), Options{})
	require.NoError(t, err)
	db := p.Entity("database")
	row := value.Row{value.StringValue("Db1"), value.IntValue(123), value.StringValue("Srv \"1\" é")}
	items, err := db.BuildArena(row, nil, &Arena{})
	require.NoError(t, err)
	require.NotEmpty(t, items)
	plain, err := db.Build(row, nil)
	require.NoError(t, err)
	require.Len(t, plain, len(items))
	schema := p.Table
	for i, it := range items {
		require.Nil(t, it.Attrs)
		require.Nil(t, plain[i].Body)
		want, err := ddbjson.Canonical(ddbjson.AppendItem(nil, plain[i].Attrs))
		require.NoError(t, err)
		got, err := ddbjson.Canonical(it.Body)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		require.Equal(t, plain[i].Attrs, it.Attributes())
		require.Equal(t, plain[i].Size, it.Size)
		require.Equal(t, plain[i].Key, it.Key)
		require.Equal(t, map[string]types.AttributeValue{schema.PK.Name: plain[i].Attrs[schema.PK.Name], schema.SK.Name: plain[i].Attrs[schema.SK.Name]},
			schema.KeyAttributes(&it))
	}
}
