package mapping

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/value"
)

// KeysOnly keeps the columns the table keys are rendered from in place and
// repeats the first key column elsewhere; BuildKeys renders the same keys
// as Build.
func TestKeysOnlyBuildsTheSameKeys(t *testing.T) {
	p, err := compileString(t, portfolioMapping, portfolioSchema())
	require.NoError(t, err)
	db := p.Entity("database")
	kp, ok := db.KeysOnly()
	require.True(t, ok)
	var names []string
	for _, c := range kp.Query.Columns {
		names = append(names, c.String())
	}
	// id, server.portfolio_id, server_id: the keys need id and the server's
	// portfolio_id; server_id is only an attribute and an index key.
	require.Equal(t, []string{"id", "server.portfolio_id", "id"}, names)
	require.Len(t, db.Query.Columns, 3, "the original plan is left alone")
	require.Equal(t, "server_id", db.Query.Columns[2].Name)

	full, err := db.Build(value.Row{value.StringValue("JeffSiteDB"), value.IntValue(1), value.StringValue("JeffSiteServer")}, nil)
	require.NoError(t, err)
	keys, err := kp.BuildKeys(value.Row{value.StringValue("JeffSiteDB"), value.IntValue(1), value.StringValue("JeffSiteDB")}, nil)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.Equal(t, full[0].Key, keys[0].Key)
	require.Equal(t, full[0].Attrs["PK"], keys[0].Attrs["PK"])
	require.Equal(t, full[0].Attrs["SK"], keys[0].Attrs["SK"])
	require.Len(t, keys[0].Attrs, 2)

	_, err = kp.BuildKeys(value.Row{value.StringValue("Orphan"), value.NullValue(), value.StringValue("Orphan")}, nil)
	var rerr *RowError
	require.ErrorAs(t, err, &rerr)
	require.Equal(t, "PK", rerr.Attribute)
}

// A nested attribute that splits makes as many part items as its size
// needs: its entity cannot be read key-only.
func TestKeysOnlyRefusesSplitNests(t *testing.T) {
	_, ok := nestPlan(t, "        from: race_readings\n        on: {race_id: race_id, racer_id: racer_id}\n        order_by: [second]\n        max_bytes: 1000\n        overflow: split\n        attributes: {S: second}\n").KeysOnly()
	require.False(t, ok)
	kp, ok := nestPlan(t, "        from: race_readings\n        on: {race_id: race_id, racer_id: racer_id}\n        order_by: [second]\n        attributes: {S: second}\n").KeysOnly()
	require.True(t, ok)
	require.Empty(t, kp.Nests())
}
