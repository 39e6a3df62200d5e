package drivers_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/source/drivers"
	"github.com/dynafold/dynafold/source/mysql"
	"github.com/dynafold/dynafold/source/postgres"
)

// Each driver's change source carries the capabilities sync and the cdc
// engine look for, and nothing connects until the change source is used.
func TestOpenChangeSource(t *testing.T) {
	pg, err := drivers.OpenChangeSource(&postgres.Source{}, drivers.ChangeOptions{Slot: "dynafold_things", Table: "Things"})
	require.NoError(t, err)
	slotted, ok := pg.(drivers.Slotted)
	require.True(t, ok)
	require.Equal(t, "dynafold_things", slotted.Slot())
	require.Implements(t, (*source.Heartbeater)(nil), pg)
	require.Implements(t, (*source.Retainer)(nil), pg, "PostgreSQL keeps the slot's WAL")
	require.NotImplements(t, (*drivers.Replica)(nil), pg)

	my, err := drivers.OpenChangeSource(&mysql.Source{}, drivers.ChangeOptions{Slot: "dynafold_things", Table: "Things"})
	require.NoError(t, err)
	replica, ok := my.(drivers.Replica)
	require.True(t, ok)
	require.Equal(t, mysql.DefaultServerID("Things"), replica.ServerID(), "0 is the table's default server_id")
	require.Implements(t, (*source.Heartbeater)(nil), my)
	require.NotImplements(t, (*drivers.Slotted)(nil), my)

	my, err = drivers.OpenChangeSource(&mysql.Source{}, drivers.ChangeOptions{ServerID: 7, Table: "Things"})
	require.NoError(t, err)
	require.EqualValues(t, 7, my.(drivers.Replica).ServerID())

	_, err = drivers.OpenChangeSource(otherSource{}, drivers.ChangeOptions{})
	require.EqualError(t, err, "the sqlite source has no change log dynafold can read")
}

// otherSource is a source of a driver without a change log.
type otherSource struct{ source.Source }

func (otherSource) Driver() string { return "sqlite" }
