package sink_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
)

// Each message says what is wrong and gives the commands that fix it.
func TestStreamErrorMessages(t *testing.T) {
	enable := "aws dynamodb update-table --table-name shop --stream-specification StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES"
	for _, tc := range []struct {
		name string
		err  sink.StreamError
		want []string
	}{
		{"missing", sink.StreamError{Table: "shop", Want: "NEW_AND_OLD_IMAGES"},
			[]string{"table shop has no stream; it needs one with view type NEW_AND_OLD_IMAGES", enable}},
		{"another view type", sink.StreamError{Table: "shop", Want: "NEW_AND_OLD_IMAGES", Have: "KEYS_ONLY"},
			[]string{"table shop has a stream with view type KEYS_ONLY; it needs NEW_AND_OLD_IMAGES",
				"aws dynamodb update-table --table-name shop --stream-specification StreamEnabled=false\n  " + enable}},
		{"unsupported", sink.StreamError{Table: "shop", Want: "NEW_AND_OLD_IMAGES", Unsupported: true},
			[]string{"table shop was created without its stream (NEW_AND_OLD_IMAGES): this endpoint does not implement DynamoDB Streams"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range tc.want {
				require.Contains(t, tc.err.Error(), w)
			}
		})
	}
}

// describeOnly answers DescribeTable with a fixed description.
type describeOnly struct{ d *types.TableDescription }

func (f describeOnly) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	if f.d == nil {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Requested resource not found")}
	}
	return &dynamodb.DescribeTableOutput{Table: f.d}, nil
}

// RequireStream, failback's check, passes only a table with an enabled
// NEW_AND_OLD_IMAGES stream, and returns its ARN.
func TestRequireStream(t *testing.T) {
	const arn = "arn:aws:dynamodb:us-east-1:1:table/shop/stream/2026"
	spec := func(enabled bool, v types.StreamViewType) *types.TableDescription {
		return &types.TableDescription{StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(enabled), StreamViewType: v}, LatestStreamArn: aws.String(arn)}
	}
	got, err := sink.RequireStream(context.Background(), describeOnly{spec(true, types.StreamViewTypeNewAndOldImages)}, "shop")
	require.NoError(t, err)
	require.Equal(t, arn, got)
	for name, d := range map[string]*types.TableDescription{
		"no stream":  {},
		"disabled":   spec(false, types.StreamViewTypeNewAndOldImages),
		"new image":  spec(true, types.StreamViewTypeNewImage),
		"keys only":  spec(true, types.StreamViewTypeKeysOnly),
		"no arn yet": {StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}},
	} {
		_, err := sink.RequireStream(context.Background(), describeOnly{d}, "shop")
		var se *sink.StreamError
		require.ErrorAs(t, err, &se, name)
		require.Equal(t, "NEW_AND_OLD_IMAGES", se.Want, name)
	}
	_, err = sink.RequireStream(context.Background(), describeOnly{}, "shop")
	require.ErrorContains(t, err, "table shop does not exist")
}

// table create sets the mapping's stream on moto's server, which keeps
// streams, and never changes the stream of an existing table: it says
// what to run instead. dynalite accepts a StreamSpecification and keeps
// nothing, which table create reports as an endpoint without streams.
func TestTableCreateStream(t *testing.T) {
	ctx := context.Background()
	withStream := func(v string) func(*mapping.TableSchema) {
		return func(s *mapping.TableSchema) { s.StreamViewType = v }
	}
	t.Run("moto", func(t *testing.T) {
		c := liveClient(t, testenv.MotoEndpoint(t))
		s := liveSchema(t, withStream("NEW_AND_OLD_IMAGES"))
		res := liveTable(t, c, s)
		require.Equal(t, "NEW_AND_OLD_IMAGES", res.State.Stream)
		require.Empty(t, res.State.Notes)
		arn, err := sink.RequireStream(ctx, c, s.Name)
		require.NoError(t, err)
		require.Contains(t, arn, "table/"+s.Name+"/stream/")
		again, err := sink.CreateTable(ctx, c, s, time.Minute)
		require.NoError(t, err)
		require.False(t, again.Created)

		// Another view type: table create and failback both refuse it.
		s.StreamViewType = "NEW_IMAGE"
		_, err = sink.CreateTable(ctx, c, s, time.Minute)
		var se *sink.StreamError
		require.ErrorAs(t, err, &se)
		require.Equal(t, sink.StreamError{Table: s.Name, Want: "NEW_IMAGE", Have: "NEW_AND_OLD_IMAGES"}, *se)

		// No stream: reported with the command, the table left as it is.
		plain := liveSchema(t, nil)
		liveTable(t, c, plain)
		_, err = sink.RequireStream(ctx, c, plain.Name)
		require.ErrorAs(t, err, &se)
		require.Contains(t, err.Error(), "aws dynamodb update-table --table-name "+plain.Name+" --stream-specification StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES")
		plain.StreamViewType = "NEW_AND_OLD_IMAGES"
		st, err := sink.DescribeTable(ctx, c, plain)
		require.NoError(t, err)
		require.Empty(t, st.Differences, "a missing stream does not stop migrate")
		require.Equal(t, []string{"the mapping declares a stream (NEW_AND_OLD_IMAGES), which the table does not have"}, st.Notes)
		_, err = sink.CreateTable(ctx, c, plain, time.Minute)
		require.ErrorAs(t, err, &se)
		require.Equal(t, sink.StreamError{Table: plain.Name, Want: "NEW_AND_OLD_IMAGES"}, *se)
		st, err = sink.DescribeTable(ctx, c, plain)
		require.NoError(t, err)
		require.Empty(t, st.Stream, "table create does not enable a stream on an existing table")

		// Each view type DynamoDB offers.
		for _, v := range []string{"KEYS_ONLY", "OLD_IMAGE"} {
			s := liveSchema(t, withStream(v))
			require.Equal(t, v, liveTable(t, c, s).State.Stream)
		}
	})
	t.Run("dynalite", func(t *testing.T) {
		c := liveClient(t, testenv.DynamoEndpoint(t))
		s := liveSchema(t, withStream("NEW_AND_OLD_IMAGES"))
		testenv.DeleteTableOnCleanup(t, c, s.Name)
		_, err := sink.CreateTable(ctx, c, s, time.Minute)
		var se *sink.StreamError
		require.ErrorAs(t, err, &se)
		require.True(t, se.Unsupported)
		require.ErrorContains(t, err, "this endpoint does not implement DynamoDB Streams")
	})
}
