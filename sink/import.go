package sink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/retry"
)

// ImportAPI is the part of the DynamoDB client that ImportTable uses.
type ImportAPI interface {
	ImportTable(ctx context.Context, in *dynamodb.ImportTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.ImportTableOutput, error)
	DescribeImport(ctx context.Context, in *dynamodb.DescribeImportInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeImportOutput, error)
}

// ErrImportLSI refuses a mapping with local secondary indexes: ImportTable
// cannot create them (they exist only from a table's creation).
var ErrImportLSI = errors.New("ImportTable cannot create local secondary indexes")

// ImportInput is the ImportTable request that creates the mapping's table
// (keys, GSIs, billing, attribute definitions, exactly as table create
// would) from the gzip DynamoDB JSON files under s3://bucket/keyPrefix.
// The client token is derived from table and source, so that running the
// same import again joins the one already started instead of starting a
// second.
func ImportInput(s *mapping.TableSchema, bucket, keyPrefix string) (*dynamodb.ImportTableInput, error) {
	for _, ix := range s.Indexes {
		if !ix.Global {
			return nil, fmt.Errorf("%w (index %s)", ErrImportLSI, ix.Name)
		}
	}
	c := createInput(s)
	token := sha256.Sum256([]byte(s.Name + "\x00" + bucket + "\x00" + keyPrefix))
	return &dynamodb.ImportTableInput{
		ClientToken:          aws.String(hex.EncodeToString(token[:16])),
		InputFormat:          types.InputFormatDynamodbJson,
		InputCompressionType: types.InputCompressionTypeGzip,
		S3BucketSource:       &types.S3BucketSource{S3Bucket: aws.String(bucket), S3KeyPrefix: aws.String(keyPrefix)},
		TableCreationParameters: &types.TableCreationParameters{
			TableName:              c.TableName,
			KeySchema:              c.KeySchema,
			AttributeDefinitions:   c.AttributeDefinitions,
			BillingMode:            c.BillingMode,
			ProvisionedThroughput:  c.ProvisionedThroughput,
			GlobalSecondaryIndexes: c.GlobalSecondaryIndexes,
		},
	}, nil
}

// WaitImport polls DescribeImport every poll until the import ends
// (COMPLETED, FAILED or CANCELLED), calling progress with each answer.
func WaitImport(ctx context.Context, api ImportAPI, arn string, poll time.Duration, progress func(*types.ImportTableDescription)) (*types.ImportTableDescription, error) {
	for {
		out, err := api.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: aws.String(arn)})
		if err != nil {
			return nil, fmt.Errorf("describing import %s: %w", arn, err)
		}
		d := out.ImportTableDescription
		if progress != nil {
			progress(d)
		}
		switch d.ImportStatus {
		case types.ImportStatusCompleted, types.ImportStatusFailed, types.ImportStatusCancelled:
			return d, nil
		}
		if err := retry.Sleep(ctx, poll); err != nil {
			return d, err
		}
	}
}
