package sink

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// ClientOptions say where DynamoDB is.
type ClientOptions struct {
	// Region; empty uses the AWS chain, and us-east-1 with a local endpoint.
	Region string
	// Endpoint is a DynamoDB-compatible URL (dynalite, DynamoDB Local);
	// empty leaves it to the AWS configuration (AWS_ENDPOINT_URL_DYNAMODB,
	// AWS_ENDPOINT_URL, a profile's endpoint_url), else AWS itself.
	Endpoint string
	// MaxConns bounds idle connections kept per host; it should be at
	// least the number of writers.
	MaxConns int
	// Logger receives retries as they happen and the SDK's own log lines
	// (nil: discarded).
	Logger *slog.Logger
	// AllowInsecure lets real credentials sign requests sent over plain
	// HTTP to a host that is not loopback, whichever source set the
	// endpoint (see CheckEndpoint).
	AllowInsecure bool
}

// writeBuffer is the HTTP connection's write buffer: a typical batch's
// headers and body go out in one write system call.
const writeBuffer = 64 << 10

// NewClient builds a DynamoDB client. Credentials and region come from the
// standard AWS chain; with an endpoint (from Endpoint or the AWS
// configuration) and no credentials in the chain, static dummy credentials
// are used, because local DynamoDB-compatible servers accept any signature.
// Real credentials bound for plain HTTP to a host that is not loopback are
// an *InsecureEndpointError, before any request is sent.
func NewClient(ctx context.Context, o ClientOptions) (*dynamodb.Client, error) {
	conns := max(o.MaxConns, 16)
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		// At least one idle connection per writer, so that a burst of
		// requests after a throttled pause reuses them instead of
		// reconnecting (and, on AWS, redoing the TLS handshake).
		t.MaxIdleConns = conns * 2
		t.MaxIdleConnsPerHost = conns
		// A batch body is usually larger than the default 4 KB buffer,
		// which makes the request two or more write system calls.
		t.WriteBufferSize = writeBuffer
	})
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient),
		config.WithLogger(sdkLogger(log)),
	}
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	if o.Endpoint != "" {
		// Nothing on a laptop or CI runner answers the EC2 metadata
		// service; asking it only adds seconds of timeouts.
		opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	// The endpoint the client will send to, whichever source set it: the
	// flag, or the SDK's own resolution (AWS_ENDPOINT_URL_DYNAMODB,
	// AWS_ENDPOINT_URL, a profile's endpoint_url or services section).
	// Building a client costs no request; this one only reads its options.
	withEndpoint := func(do *dynamodb.Options) {
		if o.Endpoint != "" {
			do.BaseEndpoint = aws.String(o.Endpoint)
		}
	}
	resolved := aws.ToString(dynamodb.NewFromConfig(cfg, withEndpoint).Options().BaseEndpoint)
	if err := CheckEndpoint(ctx, &cfg, "DynamoDB", resolved, o.AllowInsecure); err != nil {
		return nil, err
	}
	endpoint := endpointLabel(resolved)
	// The standard retryer, set explicitly: reads and table management
	// retry throttling, 5xx and connection errors up to 8 times (or
	// AWS_MAX_ATTEMPTS / max_attempts, as the AWS tools honour it) with
	// backoff. Its client-side retry quota is disabled because a long
	// migration that is throttled for a while would otherwise fail with
	// "retry quota exceeded". BatchWriteItem does not use it: the writer
	// retries itself so that it can count throttling and adapt its rate.
	attempts := 8
	if cfg.RetryMaxAttempts > 0 {
		attempts = cfg.RetryMaxAttempts
	}
	cfg.Retryer = func() aws.Retryer {
		return loggingRetryer{log: log, endpoint: endpoint, RetryerV2: retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = attempts
			so.MaxBackoff = 10 * time.Second
			so.RateLimiter = ratelimit.None
		})}
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("no AWS region: set target.region, AWS_REGION or a profile region")
	}
	return dynamodb.NewFromConfig(cfg, withEndpoint, func(do *dynamodb.Options) {
		do.APIOptions = append(do.APIOptions, unreachable(endpoint))
	}), nil
}
