package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run against a real DynamoDB-compatible server (dynalite),
// named by DYNAFOLD_TEST_DYNAMODB_ENDPOINT.

func TestPartialWritesAreRealOnDynalite(t *testing.T) {
	ep := dynamoEndpoint(t)
	direct := newClient(ep)
	table := createTable(t, direct)
	p, c := startProxy(t, ep, Config{Partial: 1, Seed: 11})

	var processed []string
	for round := range 8 {
		reqs := items("p", round*25, 25)
		out, err := write(c, table, reqs)
		require.NoError(t, err) // also proves the recomputed X-Amz-Crc32 is right
		un := out.UnprocessedItems[table]
		require.NotEmpty(t, un)
		require.Less(t, len(un), len(reqs))
		processed = append(processed, difference(keysOf(table, reqs), keysOf(table, un))...)
	}
	// What the client was told was processed is exactly what is stored.
	assert.ElementsMatch(t, processed, scanKeys(t, direct, table))
	assert.EqualValues(t, 8, p.Stats().Partial)
}

func TestResetAfterAppliesWriteOnDynalite(t *testing.T) {
	ep := dynamoEndpoint(t)
	direct := newClient(ep)
	table := createTable(t, direct)
	_, c := startProxy(t, ep, Config{ResetAfter: 1})

	reqs := items("p", 0, 10)
	_, err := write(c, table, reqs)
	require.Error(t, err)
	requireRetryable(t, err)
	assert.Equal(t, keysOf(table, reqs), scanKeys(t, direct, table))
}

// writeAll is the simplest correct BatchWriteItem writer: resend
// UnprocessedItems and retry every error, with a short jittered backoff.
func writeAll(ctx context.Context, c *dynamodb.Client, table string, reqs []types.WriteRequest) (attempts int, err error) {
	pending := reqs
	for len(pending) > 0 {
		if attempts++; attempts > 500 {
			return attempts, fmt.Errorf("gave up with %d requests pending", len(pending))
		}
		out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{table: pending},
		})
		if err == nil {
			pending = out.UnprocessedItems[table]
			if len(pending) == 0 {
				break
			}
		} else if ctx.Err() != nil {
			return attempts, errors.Join(err, ctx.Err())
		}
		time.Sleep(time.Duration(1+rand.IntN(10)) * time.Millisecond)
	}
	return attempts, nil
}

func TestAllFaultsEventuallyWriteEverythingOnDynalite(t *testing.T) {
	ep := dynamoEndpoint(t)
	direct := newClient(ep)
	table := createTable(t, direct)
	p, c := startProxy(t, ep, Config{
		Throttle: 0.1, Throttling: 0.05, Partial: 0.2, Error5xx: 0.05,
		Reset: 0.02, ResetAfter: 0.01, Latency: 5 * time.Millisecond, Seed: 1,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const total, workers = 2000, 4
	all := items("p", 0, total)
	batches := make(chan []types.WriteRequest, total/25)
	for i := 0; i < total; i += 25 {
		batches <- all[i : i+25]
	}
	close(batches)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for b := range batches {
				if _, err := writeAll(ctx, c, table, b); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	keys := scanKeys(t, direct, table)
	assert.Len(t, keys, total)
	assert.Equal(t, keysOf(table, all), keys)

	st := p.Stats()
	t.Logf("fault proxy stats: %+v", st)
	// With ~100+ eligible requests every fault kind should have fired.
	for name, n := range map[string]int64{
		"throttle": st.Throttle, "throttling": st.Throttling, "partial": st.Partial,
		"5xx": st.Error500 + st.Error503, "delayed": st.Delayed,
	} {
		assert.Positive(t, n, name)
	}
}
