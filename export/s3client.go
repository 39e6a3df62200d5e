package export

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// NewS3Client builds an S3 client from the standard AWS chain. With an
// endpoint (an S3-compatible server) it addresses buckets by path, sends
// checksums only where the API requires them (such servers often do not
// understand the SDK's streamed trailing checksums), defaults the region
// to us-east-1, and falls back to static dummy credentials when the chain
// has none.
func NewS3Client(ctx context.Context, endpoint, region string) (*s3.Client, error) {
	opts := []func(*config.LoadOptions) error{}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if endpoint != "" {
		opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if endpoint != "" {
		if cfg.Region == "" {
			cfg.Region = "us-east-1"
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cfg.Credentials.Retrieve(rctx)
		cancel()
		if err != nil {
			cfg.Credentials = credentials.NewStaticCredentialsProvider("dynafold-local", "dynafold-local", "")
		}
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("no AWS region for S3: set AWS_REGION or a profile region")
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	}), nil
}
