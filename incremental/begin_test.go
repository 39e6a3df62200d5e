package incremental

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
)

// marks is a source whose change columns' largest values are fixed.
type marks struct {
	source.Source
	max map[string]string
}

func (m *marks) MaxText(_ context.Context, t source.TableRef, _ string) (string, bool, error) {
	v, ok := m.max[t.String()]
	return v, ok, nil
}

// Begin's bounds over a run's life: a first run reads everything, a rerun
// of an unfinished run resumes its bounds, the run after a successful one
// reads from the last watermark minus the overlap, a preview saves
// nothing, and a changed mapping or --restart reads everything again.
func TestBegin(t *testing.T) {
	ctx := context.Background()
	servers := source.TableRef{Name: "servers"}
	plan := &mapping.Plan{
		Table:   &mapping.TableSchema{Name: "Things"},
		Changes: map[source.TableRef]*mapping.ChangeColumns{servers: {Table: servers, Column: "updated_at"}},
	}
	src := &marks{max: map[string]string{"servers": "2025-01-01 01:00:00"}}
	o := BeginOptions{CheckpointPath: filepath.Join(t.TempDir(), "Things.checkpoint.json"), Fingerprint: "m1", Overlap: 5 * time.Minute}

	first, err := Begin(ctx, src, plan, o)
	require.NoError(t, err)
	require.True(t, first.Pending.Full)
	require.False(t, first.Resumed)
	require.Equal(t, map[string]string{"servers": "2025-01-01 01:00:00"}, first.Pending.Watermarks)
	require.Equal(t, filepath.Join(filepath.Dir(o.CheckpointPath), "Things.incremental.json"), first.StatePath)

	src.max["servers"] = "2025-01-01 02:00:00"
	again, err := Begin(ctx, src, plan, o)
	require.NoError(t, err)
	require.True(t, again.Resumed, "the unfinished run is resumed")
	require.Equal(t, first.Pending.Watermarks, again.Pending.Watermarks, "with its bounds")
	require.Equal(t, first.Fingerprint, again.Fingerprint, "and its checkpoint")

	// The run succeeds (as Run's finish records it).
	st, err := Load(first.StatePath)
	require.NoError(t, err)
	st.Watermarks, st.Completed, st.Pending = st.Pending.Watermarks, time.Now().UTC(), nil
	require.NoError(t, Save(first.StatePath, st))
	saved, err := os.ReadFile(first.StatePath)
	require.NoError(t, err)

	dry := o
	dry.DryRun = true
	preview, err := Begin(ctx, src, plan, dry)
	require.NoError(t, err)
	require.False(t, preview.Pending.Full)
	require.Equal(t, map[string]string{"servers": "2025-01-01 00:55:00"}, preview.Pending.Since)
	require.Equal(t, map[string]string{"servers": "2025-01-01 02:00:00"}, preview.Pending.Watermarks)
	require.NotEqual(t, first.Fingerprint, preview.Fingerprint, "other bounds, another checkpoint")
	after, err := os.ReadFile(first.StatePath)
	require.NoError(t, err)
	require.Equal(t, string(saved), string(after), "a preview saves nothing")

	next, err := Begin(ctx, src, plan, o)
	require.NoError(t, err)
	require.Equal(t, preview.Pending.Since, next.Pending.Since)
	require.False(t, next.Resumed)

	changed := o
	changed.Fingerprint = "m2"
	remapped, err := Begin(ctx, src, plan, changed)
	require.NoError(t, err)
	require.False(t, remapped.Resumed, "the pending run was another mapping's")
	require.True(t, remapped.Pending.Full)

	restart := changed
	restart.Restart = true
	restarted, err := Begin(ctx, src, plan, restart)
	require.NoError(t, err)
	require.True(t, restarted.Pending.Full)
	require.False(t, restarted.Resumed)
}

func TestCheck(t *testing.T) {
	require.ErrorContains(t, Check(&mapping.Plan{}, 0), "--incremental needs a changes: block")
	plan := &mapping.Plan{Changes: map[source.TableRef]*mapping.ChangeColumns{{Name: "servers"}: {}}}
	require.EqualError(t, Check(plan, -time.Second), "--overlap must not be negative, not -1s")
	require.NoError(t, Check(plan, time.Minute))
}
