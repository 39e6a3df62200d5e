package statestore

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"
)

// The lease's failure cases, after those of AWS's DynamoDB Lock Client:
// a free lease is taken at once; a held one is not taken while renewed;
// it is taken a whole duration after its last renewal was first seen, with
// the fencing counter raised and a wait for the old holder's writes; the
// old holder stops by its own clock before that and sends nothing more;
// a renewal after a take fails on its condition; a released lease is
// taken at once; of two takers of one expired lease, one wins.

// clock is a fake time, moved by the test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// writes counts the conditional writes a lease sends.
type writes struct {
	API
	n atomic.Int64
}

func (w *writes) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	w.n.Add(1)
	return w.API.PutItem(ctx, in, o...)
}

func (w *writes) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	w.n.Add(1)
	return w.API.UpdateItem(ctx, in, o...)
}

const (
	testDuration = 9 * time.Second
	testFence    = 5 * time.Second
)

func leaseTable(t *testing.T) API {
	c, table := stateTable(t)
	return &tableAPI{API: c, table: table, name: syncName(t)}
}

// tableAPI carries the table's and the test's sync name to newTestLease.
type tableAPI struct {
	API
	table, name string
}

func newTestLease(api API, owner string, c *clock) (*Lease, *writes) {
	w := &writes{API: api}
	ta := api.(*tableAPI)
	l := NewLease(w, ta.table, ta.name, owner, testDuration, testFence)
	l.now = c.now
	return l, w
}

func TestLeaseTakeRenewExpire(t *testing.T) {
	ctx := context.Background()
	api := leaseTable(t)
	c := &clock{t: time.Unix(1000, 0)}
	a, aw := newTestLease(api, "a", c)
	b, _ := newTestLease(api, "b", c)

	// A free lease is taken at once, with counter 1 and no wait.
	var seenA Sighting
	took, err := a.TryTake(ctx, &seenA)
	require.NoError(t, err)
	require.Equal(t, &Took{Counter: 1}, took)
	require.NoError(t, a.Check())

	// b sees it held and does not take it while a renews.
	var seenB Sighting
	for range 6 {
		took, err = b.TryTake(ctx, &seenB)
		require.NoError(t, err)
		require.Nil(t, took)
		require.Equal(t, "a", seenB.Owner())
		c.add(testDuration / 3)
		require.NoError(t, a.Renew(ctx))
	}
	require.ErrorIs(t, b.Check(), ErrLeaseLost, "a standby does not hold the lease")

	// a stops renewing (stopped, partitioned): by its own clock it stops
	// two thirds of a duration after its last renewal, before b may take.
	took, err = b.TryTake(ctx, &seenB)
	require.NoError(t, err)
	require.Nil(t, took)
	c.add(testDuration*2/3 - time.Millisecond)
	require.NoError(t, a.Check())
	c.add(time.Millisecond)
	require.ErrorIs(t, a.Check(), ErrLeaseLost)
	before := aw.n.Load()
	require.ErrorIs(t, a.Renew(ctx), ErrLeaseLost)
	require.Equal(t, before, aw.n.Load(), "a holder past its expiry sends nothing, not even a renewal")

	// b takes a whole duration after it first saw a's last renewal; the
	// counter goes up and b waits out the fence less the third of a
	// duration that already separates a's last write.
	c.add(testDuration/3 - time.Millisecond)
	took, err = b.TryTake(ctx, &seenB)
	require.NoError(t, err)
	require.Nil(t, took, "not before a whole duration")
	c.add(time.Millisecond)
	took, err = b.TryTake(ctx, &seenB)
	require.NoError(t, err)
	require.Equal(t, &Took{Counter: 2, Wait: testFence - testDuration/3, From: "a"}, took)
	require.NoError(t, b.Check())
	require.Equal(t, int64(2), b.Counter())
}

func TestLeaseRenewalAfterTakeoverFails(t *testing.T) {
	ctx := context.Background()
	api := leaseTable(t)
	ca, cb := &clock{t: time.Unix(1000, 0)}, &clock{t: time.Unix(5000, 0)}
	a, _ := newTestLease(api, "a", ca)
	b, _ := newTestLease(api, "b", cb)
	var sa, sb Sighting
	_, err := a.TryTake(ctx, &sa)
	require.NoError(t, err)
	// b's clock runs faster than a's (a was paused): b takes while a still
	// counts itself the holder. a's next renewal fails on its condition.
	took, err := b.TryTake(ctx, &sb)
	require.NoError(t, err)
	require.Nil(t, took)
	cb.add(testDuration)
	took, err = b.TryTake(ctx, &sb)
	require.NoError(t, err)
	require.NotNil(t, took)
	require.NoError(t, a.Check())
	require.ErrorIs(t, a.Renew(ctx), ErrLeaseLost)
	require.ErrorIs(t, a.Check(), ErrLeaseLost, "a lost renewal ends the hold at once")
	require.NoError(t, b.Renew(ctx))
}

func TestLeaseReleasedIsTakenAtOnce(t *testing.T) {
	ctx := context.Background()
	api := leaseTable(t)
	c := &clock{t: time.Unix(1000, 0)}
	a, _ := newTestLease(api, "a", c)
	b, _ := newTestLease(api, "b", c)
	var sa, sb Sighting
	_, err := a.TryTake(ctx, &sa)
	require.NoError(t, err)
	took, err := b.TryTake(ctx, &sb)
	require.NoError(t, err)
	require.Nil(t, took)
	require.NoError(t, a.Release(ctx))
	require.ErrorIs(t, a.Check(), ErrLeaseLost)
	took, err = b.TryTake(ctx, &sb)
	require.NoError(t, err)
	require.Equal(t, &Took{Counter: 2}, took, "a released lease needs no wait")
	// A release by a holder that lost the lease changes nothing.
	require.NoError(t, a.Release(ctx))
	require.NoError(t, b.Renew(ctx))
}

func TestLeaseOneOfTwoTakersWins(t *testing.T) {
	ctx := context.Background()
	api := leaseTable(t)
	c := &clock{t: time.Unix(1000, 0)}
	a, _ := newTestLease(api, "a", c)
	var sa Sighting
	_, err := a.TryTake(ctx, &sa)
	require.NoError(t, err)
	takers := []*Lease{}
	seen := make([]Sighting, 2)
	for i, o := range []string{"b", "c"} {
		l, _ := newTestLease(api, o, c)
		takers = append(takers, l)
		took, err := l.TryTake(ctx, &seen[i])
		require.NoError(t, err)
		require.Nil(t, took)
	}
	c.add(testDuration)
	won := 0
	for i, l := range takers {
		took, err := l.TryTake(ctx, &seen[i])
		require.NoError(t, err)
		if took != nil {
			won++
			require.Equal(t, int64(2), took.Counter)
		}
	}
	require.Equal(t, 1, won)
}

func TestStateWriteIsFenced(t *testing.T) {
	ctx := context.Background()
	api := leaseTable(t)
	table, name := api.(*tableAPI).table, api.(*tableAPI).name
	old, err := NewDynamo(api, table, name)
	require.NoError(t, err)
	old.SetFence(1)
	require.NoError(t, old.WriteState(ctx, []byte("1")))
	cur, err := NewDynamo(api, table, name)
	require.NoError(t, err)
	cur.SetFence(2)
	require.NoError(t, cur.WriteState(ctx, []byte("2")))
	require.ErrorIs(t, old.WriteState(ctx, []byte("zombie")), ErrFenced, "a holder with a lower counter cannot move the position")
	doc, err := cur.ReadState(ctx)
	require.NoError(t, err)
	require.Equal(t, "2", string(doc))
	// Every write asks the guard first.
	old.Guard(func() error { return ErrLeaseLost })
	require.ErrorIs(t, old.SetKeys(ctx, []Entry{{Entity: "e", Row: []byte("r"), Keys: []string{"k"}}}), ErrFenced)
	got, err := cur.Keys(ctx, "e", [][]byte{[]byte("r")})
	require.NoError(t, err)
	require.Empty(t, got[0])
}
