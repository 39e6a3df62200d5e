package ddbnoop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestThrottlingTableWCU(t *testing.T) {
	clock := newFakeClock()
	srv, c := newTestServer(t, Options{WCU: 100, Tables: []TableSpec{testTable}, Now: clock.Now})
	ctx := context.Background()

	// A burst of 300 one-unit items against a full 100-unit bucket with the
	// clock frozen: exactly 100 are admitted.
	var admitted, unprocessed, throttled int
	for from := 0; from < 300; from += 24 {
		reqs := kbItems("p", from, min(24, 300-from))
		out, err := batchWrite(ctx, c, "items", reqs)
		if err != nil {
			var ptee *types.ProvisionedThroughputExceededException
			require.ErrorAs(t, err, &ptee)
			throttled++
			continue
		}
		un := out.UnprocessedItems["items"]
		// Admission is in request order: the unprocessed ones are the tail.
		assert.Equal(t, keysOf(reqs[len(reqs)-len(un):]), keysOf(un))
		admitted += len(reqs) - len(un)
		unprocessed += len(un)
		assert.Equal(t, float64(len(reqs)-len(un)), aws.ToFloat64(out.ConsumedCapacity[0].CapacityUnits))
	}
	assert.Equal(t, 100, admitted)
	assert.Equal(t, 20, unprocessed) // 4 batches of 24, then 4 of the 5th
	assert.Equal(t, 8, throttled)    // the remaining 8 batches: none admitted
	st := srv.Stats()
	assert.EqualValues(t, 100, st.Items)
	assert.EqualValues(t, 20, st.UnprocessedItems)
	assert.EqualValues(t, 8, st.ThrottledRequests)

	// A tenth of a second refills 10 units.
	clock.Advance(100 * time.Millisecond)
	out, err := batchWrite(ctx, c, "items", kbItems("p", 1000, 25))
	require.NoError(t, err)
	assert.Len(t, out.UnprocessedItems["items"], 15)

	// The bucket never holds more than one second's worth.
	clock.Advance(time.Hour)
	admitted = 0
	for from := 2000; from < 2300; from += 25 {
		if out, err := batchWrite(ctx, c, "items", kbItems("p", from, 25)); err == nil {
			admitted += 25 - len(out.UnprocessedItems["items"])
		}
	}
	assert.Equal(t, 100, admitted)
}

func TestThrottlingPartitionWCU(t *testing.T) {
	clock := newFakeClock()
	srv, c := newTestServer(t, Options{PartitionWCU: 10, Tables: []TableSpec{testTable}, Now: clock.Now})
	ctx := context.Background()

	// 15 items on a hot key interleaved with 10 on distinct keys: the hot
	// key gets 10, every other key gets its item.
	var reqs []types.WriteRequest
	for i := range 25 {
		pk := "hot"
		if i%5 == 4 || i%5 == 2 {
			pk = fmt.Sprintf("cold%d", i)
		}
		reqs = append(reqs, kbItems(pk, i, 1)...)
	}
	out, err := batchWrite(ctx, c, "items", reqs)
	require.NoError(t, err)
	un := out.UnprocessedItems["items"]
	require.Len(t, un, 5)
	for _, k := range keysOf(un) {
		assert.True(t, strings.HasPrefix(k, "hot/"), k)
	}
	// The last five hot items are the ones held back.
	var hot []types.WriteRequest
	for _, r := range reqs {
		if r.PutRequest.Item["PK"].(*types.AttributeValueMemberS).Value == "hot" {
			hot = append(hot, r)
		}
	}
	assert.Equal(t, keysOf(hot[10:]), keysOf(un))

	// Now the hot key alone is exhausted: a request only for it fails whole.
	_, err = batchWrite(ctx, c, "items", kbItems("hot", 100, 3))
	var ptee *types.ProvisionedThroughputExceededException
	require.ErrorAs(t, err, &ptee)
	assert.EqualValues(t, 1, srv.Stats().ThrottledRequests)

	// An item bigger than the whole burst goes through on a full bucket.
	_, err = batchWrite(ctx, c, "items", puts(itemOfSize("huge", "x", 50*1024)))
	require.NoError(t, err)
	_, err = batchWrite(ctx, c, "items", puts(itemOfSize("huge", "y", 1000)))
	require.ErrorAs(t, err, &ptee) // ...and leaves the bucket in debt
}
