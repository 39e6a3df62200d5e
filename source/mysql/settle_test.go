package mysql

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// The binlog is the whole server's: the last transaction before sync's
// start position may touch another application's table, which can be
// dropped, with its database, between settle finding it and probing it.
// A table or database that no longer exists has no row left for the load
// to miss: settle goes on (CI once failed a sync's start on a concurrent
// test's dropped database).
func TestSettleProbeOfAGoneTableIsNoWait(t *testing.T) {
	ctx := context.Background()
	src, _ := binlogSource(t)
	p, err := src.newProber(ctx)
	require.NoError(t, err)
	defer p.Close()
	img := map[string]value.Value{"id": value.IntValue(1)}
	for _, ref := range []source.TableRef{{Name: "dropped_table"}, {Schema: "dropped_database_of_another_app", Name: "accounts"}} {
		_, err := p.probe(ctx, &source.Table{Ref: ref, PrimaryKey: []string{"id"}}, img)
		require.Error(t, err, "%v", ref)
		require.True(t, tableGone(err), "%v: %v", ref, err)
	}
	require.False(t, tableGone(nil))
}
