package sink

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// deleteAPI answers BatchWriteItem delete requests: each call takes the
// next scripted outcome (leave the first n unprocessed, or fail).
type deleteAPI struct {
	script  []func(n int) (unprocessed int, err error)
	deleted []string
	calls   int
}

func (f *deleteAPI) BatchWriteItem(_ context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	f.calls++
	reqs := in.RequestItems["t"]
	if len(reqs) > MaxBatchItems {
		return nil, errors.New("too many requests")
	}
	left := 0
	if len(f.script) > 0 {
		var err error
		left, err = f.script[0](len(reqs))
		f.script = f.script[1:]
		if err != nil {
			return nil, err
		}
	}
	for _, r := range reqs[left:] {
		f.deleted = append(f.deleted, r.DeleteRequest.Key["PK"].(*types.AttributeValueMemberS).Value)
	}
	return &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{"t": reqs[:left]}}, nil
}

func deleteKeys(n int) []map[string]types.AttributeValue {
	out := make([]map[string]types.AttributeValue, n)
	for i := range out {
		out[i] = map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: fmt.Sprint(i)}}
	}
	return out
}

func TestDeleter(t *testing.T) {
	throttled := func(int) (int, error) { return 0, &types.ProvisionedThroughputExceededException{} }
	tests := []struct {
		name    string
		keys    int
		script  []func(int) (int, error)
		calls   int
		wantErr string
	}{
		{"batches of 25", 60, nil, 3, ""},
		{"unprocessed items sent again", 10, []func(int) (int, error){func(int) (int, error) { return 4, nil }, func(int) (int, error) { return 4, nil }}, 3, ""},
		{"throttling retried", 5, []func(int) (int, error){throttled, throttled}, 3, ""},
		{"gives up without progress", 5, []func(int) (int, error){throttled, throttled, throttled}, 3, "giving up after 3 attempts"},
		{"fatal error stops", 5, []func(int) (int, error){func(int) (int, error) { return 0, &types.ResourceNotFoundException{} }}, 1, "deleting from table t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &deleteAPI{script: tt.script}
			d := NewDeleter(api, "t")
			d.sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
			d.maxAttempts = 3
			err := d.Delete(context.Background(), deleteKeys(tt.keys))
			require.Equal(t, tt.calls, api.calls)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.ElementsMatch(t, keyNamesOf(tt.keys), api.deleted)
		})
	}
}

func keyNamesOf(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i)
	}
	return out
}
