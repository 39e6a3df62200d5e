package sink

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/retry"
)

// getAPI answers BatchGetItem: each call takes the next scripted outcome
// (leave the last n keys unprocessed and return the rest, or fail).
type getAPI struct {
	script []func() (unprocessed int, err error)
	calls  int
}

func (f *getAPI) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	f.calls++
	keys := in.RequestItems["t"].Keys
	left := 0
	if len(f.script) > 0 {
		var err error
		left, err = f.script[0]()
		f.script = f.script[1:]
		if err != nil {
			return nil, err
		}
	}
	left = min(left, len(keys))
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{"t": keys[:len(keys)-left]}}
	if left > 0 {
		out.UnprocessedKeys = map[string]types.KeysAndAttributes{"t": {Keys: keys[len(keys)-left:]}}
	}
	return out, nil
}

func TestGetItems(t *testing.T) {
	keys := func(n int) []map[string]types.AttributeValue {
		out := make([]map[string]types.AttributeValue, n)
		for i := range out {
			out[i] = map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: string(rune('a' + i))}}
		}
		return out
	}
	policy := retry.Policy{Attempts: 3, Backoff: retry.Backoff{Base: time.Millisecond, Max: time.Millisecond}, Sleep: func(context.Context, time.Duration) error { return nil }}
	leave := func(n int) func() (int, error) { return func() (int, error) { return n, nil } }
	throttled := func() (int, error) {
		return 0, &types.ProvisionedThroughputExceededException{Message: new("slow down")}
	}

	t.Run("unprocessed keys are read again until none is left", func(t *testing.T) {
		api := &getAPI{script: []func() (int, error){leave(3), leave(1), throttled}}
		var got int
		require.NoError(t, GetItems(context.Background(), api, "t", keys(5), policy, func(map[string]types.AttributeValue) { got++ }))
		require.Equal(t, 5, got)
		require.Equal(t, 4, api.calls)
	})
	t.Run("attempts without progress run out", func(t *testing.T) {
		api := &getAPI{script: []func() (int, error){leave(2), leave(2), leave(2), leave(2)}}
		err := GetItems(context.Background(), api, "t", keys(5), policy, func(map[string]types.AttributeValue) {})
		var ex *GetExhaustedError
		require.ErrorAs(t, err, &ex)
		require.True(t, ex.Unprocessed())
		require.Equal(t, 2, ex.Left)
		require.Equal(t, 3, ex.Attempts)
	})
	t.Run("a refused request ends it at once", func(t *testing.T) {
		api := &getAPI{script: []func() (int, error){func() (int, error) {
			return 0, &types.ResourceNotFoundException{Message: new("no table")}
		}}}
		err := GetItems(context.Background(), api, "t", keys(2), policy, func(map[string]types.AttributeValue) {})
		require.ErrorContains(t, err, "reading table t: ")
		var ex *GetExhaustedError
		require.False(t, errors.As(err, &ex))
		require.Equal(t, 1, api.calls)
	})
}
