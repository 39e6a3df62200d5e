package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynafold/dynafold/internal/connerr"
)

// sdkLogger sends the SDK's own log lines to the run's logger. The SDK
// warns about things that change nothing dynafold does (a response
// checksum it could not check, for example), so its lines go at debug.
func sdkLogger(l *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		l.Debug(fmt.Sprintf(format, v...), "from", "aws-sdk", "sdk_level", string(c))
	})
}

// UnreachableError is a request that failed to connect on every attempt
// the retryer allowed: the endpoint is down, mistyped or filtered.
type UnreachableError struct {
	Service  string // "DynamoDB"
	Endpoint string // the URL (printed with its userinfo redacted), or "the AWS endpoint"
	Attempts int
	Elapsed  time.Duration
	Err      error
}

func (e *UnreachableError) Error() string {
	hint := ""
	if e.Attempts > 2 {
		hint = "set AWS_MAX_ATTEMPTS=2 to fail faster"
	}
	return connerr.Unreachable(e.Service, RedactEndpoint(e.Endpoint), connerr.Cause(e.Err), e.Attempts, e.Elapsed, hint)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// loggingRetryer shows every retry of a request that could not connect as
// it happens (at warn: an operator waiting on a silent run needs to know),
// and any other retry (throttling, 5xx) at debug.
type loggingRetryer struct {
	aws.RetryerV2
	log      *slog.Logger
	endpoint string
}

func (r loggingRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	d, derr := r.RetryerV2.RetryDelay(attempt, err)
	if derr != nil {
		return d, derr
	}
	max := r.MaxAttempts()
	if connerr.Is(err) {
		r.log.Warn(connerr.Retrying("DynamoDB", RedactEndpoint(r.endpoint), connerr.Cause(err), d.Round(100*time.Millisecond), attempt+1, max),
			"attempt", attempt+1, "max_attempts", max)
	} else {
		r.log.Debug("DynamoDB request retried", "attempt", attempt+1, "max_attempts", max, "delay", d, "error", err)
	}
	return d, nil
}

// unreachable wraps a request's final error in an UnreachableError when
// every attempt failed to connect. It sits in the Initialize step, outside
// the retry loop, so it times all the attempts together.
func unreachable(endpoint string) func(*middleware.Stack) error {
	mw := middleware.InitializeMiddlewareFunc("dynafoldUnreachable", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		start := time.Now()
		out, md, err := next.HandleInitialize(ctx, in)
		var max *retry.MaxAttemptsError
		if err != nil && ctx.Err() == nil && errors.As(err, &max) && connerr.Is(err) {
			err = &UnreachableError{Service: "DynamoDB", Endpoint: endpoint, Attempts: max.Attempt, Elapsed: time.Since(start), Err: err}
		}
		return out, md, err
	})
	return func(s *middleware.Stack) error { return s.Initialize.Add(mw, middleware.Before) }
}
