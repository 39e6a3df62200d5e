package export

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dynafold/dynafold/sink"
)

// S3ClientOptions say where S3 is.
type S3ClientOptions struct {
	// Endpoint is an S3-compatible URL; empty leaves it to the AWS
	// configuration (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, a profile's
	// endpoint_url), else AWS itself.
	Endpoint string
	// Region; empty uses the AWS chain, and us-east-1 with an endpoint.
	Region string
	// AllowInsecure lets real credentials sign requests sent over plain
	// HTTP to a host that is not loopback (see sink.CheckEndpoint).
	AllowInsecure bool
}

// NewS3Client builds an S3 client from the standard AWS chain. With an
// Endpoint (an S3-compatible server) it addresses buckets by path and sends
// checksums only where the API requires them (such servers often do not
// understand the SDK's streamed trailing checksums). With an endpoint from
// any source, the region defaults to us-east-1, dummy credentials sign when
// the chain has none, and real ones bound for plain HTTP to a host that is
// not loopback are a *sink.InsecureEndpointError, as for DynamoDB.
func NewS3Client(ctx context.Context, o S3ClientOptions) (*s3.Client, error) {
	opts := []func(*config.LoadOptions) error{}
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	if o.Endpoint != "" {
		opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	withEndpoint := func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
			so.UsePathStyle = true
			so.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	}
	// The endpoint the client will send to, whichever source set it (see
	// sink.NewClient); building a client costs no request.
	resolved := aws.ToString(s3.NewFromConfig(cfg, withEndpoint).Options().BaseEndpoint)
	if err := sink.CheckEndpoint(ctx, &cfg, "S3", resolved, o.AllowInsecure); err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("no AWS region for S3: set AWS_REGION or a profile region")
	}
	return s3.NewFromConfig(cfg, withEndpoint), nil
}
