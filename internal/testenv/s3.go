package testenv

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Endpoint returns the S3-compatible server's URL (s3rver, started by
// scripts/services.sh).
func S3Endpoint(t testing.TB) string {
	return lookup(t, "DYNAFOLD_TEST_S3_ENDPOINT", dialEndpoint)
}

// s3Key is the key id and secret s3rver accepts (it checks the key id, and
// with --allow-mismatched-signatures not the signature); S3Env passes them
// to dynafold through the standard AWS chain.
const s3Key = "S3RVER"

// S3Env is the environment that gives a dynafold process the test S3
// server's credentials.
func S3Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s3Key, "AWS_SECRET_ACCESS_KEY=" + s3Key}
}

// S3Client returns a path-style client for the test S3 server.
func S3Client(t testing.TB) *s3.Client {
	t.Helper()
	endpoint := S3Endpoint(t)
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(s3Key, s3Key, "")),
	)
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
}

// NewBucket creates a bucket of its own for the test and removes it, with
// its objects, at the end.
func NewBucket(t testing.TB, c *s3.Client) string {
	t.Helper()
	name := strings.ReplaceAll(uniqueName(t, "dfb", 60), "_", "-")
	_, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, k := range S3Keys(t, c, name, "") {
			_, _ = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String(k)})
		}
		_, _ = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
	})
	return name
}

// S3Keys lists the keys under prefix.
func S3Keys(t testing.TB, c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// S3Get returns an object's content; nil with ok=false when absent.
func S3Get(t testing.TB, c *s3.Client, bucket, key string) ([]byte, bool) {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		var nf interface{ ErrorCode() string }
		if errors.As(err, &nf) && (nf.ErrorCode() == "NoSuchKey" || nf.ErrorCode() == "NotFound") {
			return nil, false
		}
		t.Fatal(err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return data, true
}
