package cdc

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/metrics"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/statestore"
)

// standbyLease is held by another sync until took is sent, then taken
// with a wait.
type standbyLease struct {
	took     chan *statestore.Took
	taken    chan struct{}
	released atomic.Bool
}

func (l *standbyLease) Take(ctx context.Context, standby func(string)) (*statestore.Took, error) {
	standby("other")
	select {
	case t := <-l.took:
		close(l.taken)
		return t, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *standbyLease) Keep(ctx context.Context) error    { <-ctx.Done(); return nil }
func (l *standbyLease) Check() error                      { return nil }
func (l *standbyLease) Release(ctx context.Context) error { l.released.Store(true); return nil }

func leasedJob(t *testing.T) Job {
	st, err := statestore.OpenFile(t.TempDir() + "/t.sync.json")
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return Job{State: st}
}

// A standby is not ready, and a stop signal ends it at once, resumably.
func TestStandbyStopsOnSignal(t *testing.T) {
	lease := &standbyLease{took: make(chan *statestore.Took), taken: make(chan struct{})}
	stop := make(chan struct{})
	health := metrics.NewHealth(time.Minute)
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), leasedJob(t), Options{Lease: lease, Stop: stop, Health: health})
		done <- err
	}()
	require.Eventually(t, func() bool {
		ok, why := health.Ready()
		return !ok && why == "standby: another sync holds the state's lease"
	}, 5*time.Second, 10*time.Millisecond)
	close(stop)
	require.ErrorIs(t, <-done, pipeline.ErrInterrupted)
	require.False(t, lease.released.Load(), "a standby holds nothing to release")
}

// A stop during the fence wait after a take releases the lease: nothing
// was written.
func TestFenceWaitStopsOnSignal(t *testing.T) {
	lease := &standbyLease{took: make(chan *statestore.Took, 1), taken: make(chan struct{})}
	lease.took <- &statestore.Took{Counter: 2, Wait: time.Hour}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), leasedJob(t), Options{Lease: lease, Stop: stop})
		done <- err
	}()
	<-lease.taken
	close(stop)
	require.ErrorIs(t, <-done, pipeline.ErrInterrupted)
	require.True(t, lease.released.Load())
}
