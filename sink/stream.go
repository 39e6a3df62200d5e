package sink

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// FailbackViewType is the stream view type failback reads: an update's
// old image says which rows the item held before, its new image what
// they hold now.
const FailbackViewType = string(types.StreamViewTypeNewAndOldImages)

// StreamError is a table whose DynamoDB stream is not the one needed:
// missing, of another view type, or not kept by an endpoint that does not
// implement streams. Its message says how to fix it; the CLI exits 2.
type StreamError struct {
	Table string
	// Want is the view type needed, Have the table's ("" for no stream).
	Want, Have string
	// Unsupported: the endpoint accepted a StreamSpecification and kept
	// none (dynalite does this), so no command fixes it there.
	Unsupported bool
}

func (e *StreamError) Error() string {
	enable := fmt.Sprintf("aws dynamodb update-table --table-name %s --stream-specification StreamEnabled=true,StreamViewType=%s", e.Table, e.Want)
	switch {
	case e.Unsupported:
		return fmt.Sprintf("table %s was created without its stream (%s): this endpoint does not implement DynamoDB Streams (dynalite does not); use DynamoDB or a server that does, such as moto's", e.Table, e.Want)
	case e.Have == "":
		return fmt.Sprintf("table %s has no stream; it needs one with view type %s. Enable it with:\n  %s", e.Table, e.Want, enable)
	default:
		// DynamoDB changes no view type in place: the stream is disabled,
		// then enabled again, which starts a new stream.
		return fmt.Sprintf("table %s has a stream with view type %s; it needs %s. A view type cannot be changed in place: disable the stream, then enable a new one:\n  aws dynamodb update-table --table-name %s --stream-specification StreamEnabled=false\n  %s",
			e.Table, e.Have, e.Want, e.Table, enable)
	}
}

// DescribeAPI is the part of the DynamoDB client that reads a table's
// description.
type DescribeAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// RequireStream returns the ARN of table's latest stream, for failback,
// which reads it: a *StreamError when the table has no stream or one
// whose view type is not NEW_AND_OLD_IMAGES, and the DescribeTable error
// when the table cannot be described (a missing table included).
func RequireStream(ctx context.Context, api DescribeAPI, table string) (string, error) {
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			return "", fmt.Errorf("table %s does not exist: %w", table, err)
		}
		return "", fmt.Errorf("describing table %s: %w", table, err)
	}
	have := streamViewType(out.Table)
	if have != FailbackViewType || aws.ToString(out.Table.LatestStreamArn) == "" {
		return "", &StreamError{Table: table, Want: FailbackViewType, Have: have}
	}
	return aws.ToString(out.Table.LatestStreamArn), nil
}

// streamViewType is the view type of the table's enabled stream, or "".
func streamViewType(d *types.TableDescription) string {
	if d == nil || d.StreamSpecification == nil || !aws.ToBool(d.StreamSpecification.StreamEnabled) {
		return ""
	}
	return string(d.StreamSpecification.StreamViewType)
}

// streamSpecification is the CreateTable setting for view type v ("" for
// none).
func streamSpecification(v string) *types.StreamSpecification {
	if v == "" {
		return nil
	}
	return &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewType(v)}
}
