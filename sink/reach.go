package sink

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynafold/dynafold/internal/connerr"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/retry"
)

// ReachGuard stands between the writers and BatchWriteItem, which the
// SDK does not retry (the writer does, to count throttling). When the
// endpoint stops accepting connections in the middle of a run (a request
// fails to connect at all; a connection that breaks is the writer's to
// retry and count), every writer would
// otherwise retry on its own: eight warnings per round, and a final error
// that says "giving up after 12 attempts" in the SDK's words. Instead one
// request at a time waits for the endpoint, with the client's retryer
// (AWS_MAX_ATTEMPTS, the same backoff and the same warning per retry as
// any other request), while the others wait behind it; when it gives up
// every writer fails with the same *UnreachableError.
type ReachGuard struct {
	api      BatchWriteAPI
	direct   *DirectSender // nil in tests with a fake api
	retryer  aws.Retryer
	endpoint string
	sleep    func(context.Context, time.Duration) error

	mu        sync.Mutex
	recovered time.Time // when a waiting request last got through
	down      error     // set once the endpoint was given up on
	// waiting is set while a request waits for the endpoint.
	waiting atomic.Bool
}

// Waiting reports whether a request is waiting for the endpoint to accept
// connections again: for readiness, which fails meanwhile.
func (g *ReachGuard) Waiting() bool { return g.waiting.Load() }

// NewReachGuard guards client's BatchWriteItem with the client's own
// retryer (see NewClient).
func NewReachGuard(client *dynamodb.Client) *ReachGuard {
	o := client.Options()
	endpoint := "the AWS endpoint"
	if o.BaseEndpoint != nil {
		endpoint = *o.BaseEndpoint
	}
	r := o.Retryer
	if r == nil {
		r = awsretry.NewStandard()
	}
	return &ReachGuard{api: client, direct: NewDirectSender(client), retryer: r, endpoint: endpoint, sleep: retry.Sleep}
}

// SendThroughSDK makes the guard send every body through the client's
// BatchWriteItem (the SDK's middleware stack) instead of the
// DirectSender: slower, and a way to tell a fault of the direct path from
// one of the endpoint.
func (g *ReachGuard) SendThroughSDK() { g.direct = nil }

// BatchWriteItem implements BatchWriteAPI.
func (g *ReachGuard) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	return g.guard(ctx, func() (*dynamodb.BatchWriteItemOutput, error) { return g.api.BatchWriteItem(ctx, in, optFns...) })
}

// SendBody implements BodySender: through the DirectSender when the guard
// has one (a real client), else as BatchWriteItem with the body. The
// guard may send body several times while it waits for the endpoint; the
// caller owns it throughout and releases it once SendBody has returned.
func (g *ReachGuard) SendBody(ctx context.Context, table string, pending []*mapping.Item, body *Body) (*dynamodb.BatchWriteItemOutput, error) {
	if g.direct != nil {
		out, err := g.guard(ctx, func() (*dynamodb.BatchWriteItemOutput, error) { return g.direct.Send(ctx, table, body) })
		if !errors.Is(err, ErrViaSDK) {
			return out, err
		}
	}
	return g.BatchWriteItem(ctx, batchInput(table, pending), noRetry, withBody(body.Bytes()))
}

// guard makes call, and when it cannot connect, waits for the endpoint
// as the type's comment says.
func (g *ReachGuard) guard(ctx context.Context, call func() (*dynamodb.BatchWriteItemOutput, error)) (*dynamodb.BatchWriteItemOutput, error) {
	out, err := call()
	if err == nil || ctx.Err() != nil || !connerr.Dial(err) {
		return out, err
	}
	failed := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.down != nil:
		return nil, g.down
	case g.recovered.After(failed):
		// Another request waited the outage out meanwhile: try again now.
		return call()
	}
	g.waiting.Store(true)
	defer g.waiting.Store(false)
	// The retryer's RetryDelay logs each retry (see loggingRetryer).
	policy := retry.Policy{Attempts: g.retryer.MaxAttempts(), Delay: g.retryer.RetryDelay, Sleep: g.sleep}
	err = retry.DoAfter(ctx, policy, retry.Always, err, func(ctx context.Context) (bool, error) {
		var cerr error
		if out, cerr = call(); cerr == nil || ctx.Err() != nil || !connerr.Dial(cerr) {
			g.recovered = time.Now()
			return false, retry.Final(cerr)
		}
		return false, cerr
	})
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) {
		g.down = &UnreachableError{Service: "DynamoDB", Endpoint: g.endpoint, Attempts: ex.Attempts, Elapsed: time.Since(failed), Err: ex.Err}
		return nil, g.down
	}
	return out, err
}

// Rearm forgets that the endpoint was given up on, so that the next
// request waits for it again: for a long-running sync, which waits out an
// outage round after round instead of ending.
func (g *ReachGuard) Rearm() {
	g.mu.Lock()
	g.down = nil
	g.mu.Unlock()
}
