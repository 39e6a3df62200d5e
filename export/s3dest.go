package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/dynafold/dynafold/internal/durable"
)

// S3 is an S3 prefix destination. Files are spooled to a local directory
// and uploaded with the SDK's upload manager (multipart for large files);
// an object exists only once its upload completed, which is what makes it
// durable.
type S3 struct {
	client *s3.Client
	up     *manager.Uploader
	bucket string
	prefix string
	spool  string
}

// NewS3 returns the destination s3://bucket/prefix, spooling in spool
// (created owner-only when missing: the spooled files hold rows).
func NewS3(client *s3.Client, bucket, prefix, spool string) (*S3, error) {
	if err := durable.MkdirAll(spool); err != nil {
		return nil, err
	}
	return &S3{client: client, up: manager.NewUploader(client), bucket: bucket, prefix: prefix, spool: spool}, nil
}

func (d *S3) String() string   { return "s3://" + d.bucket + "/" + d.prefix }
func (d *S3) SpoolDir() string { return d.spool }

// Commit implements Destination.
func (d *S3) Commit(ctx context.Context, path, name string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := d.up.Upload(ctx, &s3.PutObjectInput{
		Bucket: aws.String(d.bucket), Key: aws.String(d.prefix + DataDir + name), Body: f,
		ContentType: aws.String("application/gzip"),
	}); err != nil {
		return fmt.Errorf("uploading %s to %s: %w", name, d, err)
	}
	return os.Remove(path)
}

// List implements Destination.
func (d *S3) List(ctx context.Context) ([]string, error) {
	var names []string
	p := s3.NewListObjectsV2Paginator(d.client, &s3.ListObjectsV2Input{Bucket: aws.String(d.bucket), Prefix: aws.String(d.prefix + DataDir)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", d, err)
		}
		for _, o := range page.Contents {
			names = append(names, strings.TrimPrefix(aws.ToString(o.Key), d.prefix+DataDir))
		}
	}
	return names, nil
}

// Remove implements Destination.
func (d *S3) Remove(ctx context.Context, names []string) error {
	for _, n := range names {
		if _, err := d.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(d.bucket), Key: aws.String(d.prefix + DataDir + n)}); err != nil {
			return fmt.Errorf("deleting %s from %s: %w", n, d, err)
		}
	}
	return nil
}

func (d *S3) PutManifest(ctx context.Context, data []byte) error {
	_, err := d.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(d.bucket), Key: aws.String(d.prefix + ManifestName), Body: strings.NewReader(string(data)),
		ContentType: aws.String("application/json"),
	})
	return err
}

func (d *S3) RemoveManifest(ctx context.Context) error {
	_, err := d.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(d.bucket), Key: aws.String(d.prefix + ManifestName)})
	return err
}

func (d *S3) ReadManifest(ctx context.Context) ([]byte, error) {
	out, err := d.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(d.bucket), Key: aws.String(d.prefix + ManifestName)})
	var nk *types.NoSuchKey
	if errors.As(err, &nk) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of %s: %w", d, err)
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

func (d *S3) ManifestExists(ctx context.Context) (bool, error) {
	_, err := d.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(d.bucket), Key: aws.String(d.prefix + ManifestName)})
	var nf *types.NotFound
	if errors.As(err, &nf) {
		return false, nil
	}
	return err == nil, err
}
