package mapping

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/ddbjson"
	"github.com/dynafold/dynafold/value"
)

// TestArenaBuildEncodesBody: a build with an arena (the migrate hot path)
// leaves each item's DynamoDB JSON in Body, the encoding of its Attrs;
// a build without one leaves Body to the writer.
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
	for _, it := range items {
		want, err := ddbjson.Canonical(ddbjson.AppendItem(nil, it.Attrs))
		require.NoError(t, err)
		got, err := ddbjson.Canonical(it.Body)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
	plain, err := db.Build(row, nil)
	require.NoError(t, err)
	require.Nil(t, plain[0].Body)
}
