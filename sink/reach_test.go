package sink

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"
)

// refusingAPI refuses the first n calls as an endpoint that is down does.
type refusingAPI struct {
	mu    sync.Mutex
	n     int
	calls int
}

func (f *refusingAPI) BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls <= f.n {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	return &dynamodb.BatchWriteItemOutput{}, nil
}

func newTestGuard(api BatchWriteAPI, attempts int, logs *bytes.Buffer) *ReachGuard {
	log := slog.New(slog.NewTextHandler(logs, nil))
	r := loggingRetryer{log: log, endpoint: "http://db", RetryerV2: retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = attempts })}
	return &ReachGuard{api: api, retryer: r, endpoint: "http://db", sleep: func(context.Context, time.Duration) error { return nil }}
}

func TestReachGuard(t *testing.T) {
	t.Run("gives up after the attempts, once for all writers", func(t *testing.T) {
		var logs bytes.Buffer
		api := &refusingAPI{n: 1000}
		g := newTestGuard(api, 4, &logs)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = g.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{})
			}()
		}
		wg.Wait()
		for _, err := range errs {
			var ue *UnreachableError
			require.True(t, errors.As(err, &ue), "%v", err)
			require.Equal(t, 4, ue.Attempts)
			require.Equal(t, classFatal, classify(err), "the writer does not retry it again")
		}
		require.Equal(t, 3, strings.Count(logs.String(), "cannot reach DynamoDB at http://db: connection refused; retrying"), logs.String())
	})
	t.Run("an endpoint back in time is written to", func(t *testing.T) {
		var logs bytes.Buffer
		g := newTestGuard(&refusingAPI{n: 2}, 4, &logs)
		_, err := g.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{})
		require.NoError(t, err)
		require.Equal(t, 2, strings.Count(logs.String(), "retrying"), logs.String())
	})
}
