package sink_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
)

// behaviour is one thing DynamoDB's documentation promises, checked on an
// emulator. differs names the emulators known not to keep the promise,
// with what they do instead: docs/emulators.md lists the same, and this
// test fails when an emulator starts or stops keeping it, so that the
// page stays true.
type behaviour struct {
	name       string
	documented string
	differs    map[string]string
	// unsteady are emulators seen both to keep and to break the
	// behaviour, run to run: either is logged, neither fails.
	unsteady map[string]string
	// check returns what the emulator did and whether that is the
	// documented behaviour; table has string keys PK and SK.
	check func(ctx context.Context, t *testing.T, c *dynamodb.Client, table string) (observed string, documented bool)
}

// errorCode is the API error's code, or the error itself.
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	if err == nil {
		return "accepted"
	}
	return err.Error()
}

// refused: the request must fail with ValidationException.
func refused(err error) (string, bool) {
	code := errorCode(err)
	return code, code == "ValidationException"
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: sk}}
}

func put(item map[string]types.AttributeValue) types.WriteRequest {
	return types.WriteRequest{PutRequest: &types.PutRequest{Item: item}}
}

func batch(ctx context.Context, c *dynamodb.Client, table string, reqs ...types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error) {
	return c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
}

// createTable sends CreateTable for a fresh PK-keyed table (deleted when
// the test ends), edited by edit.
func createTable(ctx context.Context, t *testing.T, c *dynamodb.Client, edit func(*dynamodb.CreateTableInput)) (*dynamodb.CreateTableOutput, error) {
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(testenv.NewTableName(t)),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
	if edit != nil {
		edit(in)
	}
	testenv.DeleteTableOnCleanup(t, c, *in.TableName)
	return c.CreateTable(ctx, in)
}

func behaviours() []behaviour {
	return []behaviour{
		{
			name:       "BatchWriteItem takes at most 25 requests",
			documented: "ValidationException for 26",
			differs:    map[string]string{"moto": "writes all 26"},
			check: func(ctx context.Context, _ *testing.T, c *dynamodb.Client, table string) (string, bool) {
				reqs := make([]types.WriteRequest, 26)
				for i := range reqs {
					reqs[i] = put(key("b26", fmt.Sprint(i)))
				}
				_, err := batch(ctx, c, table, reqs...)
				return refused(err)
			},
		},
		{
			name:       "BatchWriteItem refuses two puts of one key",
			documented: "ValidationException",
			// Refused in the runs of the day it was written, accepted in
			// a CI run of the same moto (5.2.1) on the same machine.
			unsteady: map[string]string{"moto": "refuses in some runs, writes both in others"},
			check: func(ctx context.Context, _ *testing.T, c *dynamodb.Client, table string) (string, bool) {
				_, err := batch(ctx, c, table, put(key("dup", "x")), put(key("dup", "x")))
				return refused(err)
			},
		},
		{
			name:       "BatchWriteItem refuses a put and a delete of one key",
			documented: "ValidationException",
			differs:    map[string]string{"moto": "applies both"},
			check: func(ctx context.Context, _ *testing.T, c *dynamodb.Client, table string) (string, bool) {
				_, err := batch(ctx, c, table, put(key("pd", "x")), types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key("pd", "x")}})
				return refused(err)
			},
		},
		{
			name:       "BatchWriteItem's consumed capacity is one write unit per KB of each item",
			documented: "6 units for three 1.5 KB items",
			differs:    map[string]string{"moto": "1 unit per request, whatever it holds"},
			check: func(ctx context.Context, _ *testing.T, c *dynamodb.Client, table string) (string, bool) {
				reqs := make([]types.WriteRequest, 3)
				for i := range reqs {
					it := key("cap", fmt.Sprint(i))
					it["d"] = &types.AttributeValueMemberS{Value: strings.Repeat("x", 1500)}
					reqs[i] = put(it)
				}
				out, err := batch(ctx, c, table, reqs...)
				if err != nil {
					return errorCode(err), false
				}
				var units float64
				for _, cc := range out.ConsumedCapacity {
					units += aws.ToFloat64(cc.CapacityUnits)
				}
				return fmt.Sprint(units, " units"), units == 6
			},
		},
		{
			name:       "An item over 400 KB is refused",
			documented: "ValidationException",
			check: func(ctx context.Context, _ *testing.T, c *dynamodb.Client, table string) (string, bool) {
				it := key("big", "x")
				it["d"] = &types.AttributeValueMemberS{Value: strings.Repeat("x", 400*1024)}
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it})
				return refused(err)
			},
		},
		{
			name:       "A number of more than 38 significant digits is refused",
			documented: "ValidationException",
			differs:    map[string]string{"moto": "stores all 39 digits"},
			check: func(ctx context.Context, _ *testing.T, c *dynamodb.Client, table string) (string, bool) {
				it := key("n39", "x")
				it["v"] = &types.AttributeValueMemberN{Value: "123456789012345678901234567890123456789"}
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it})
				return refused(err)
			},
		},
		{
			name:       "An empty string in a key attribute is refused",
			documented: "ValidationException",
			check: func(ctx context.Context, _ *testing.T, c *dynamodb.Client, table string) (string, bool) {
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key("", "x")})
				return refused(err)
			},
		},
		{
			name:       "A table name has 3 to 255 characters",
			documented: "ValidationException for a 2-character name",
			differs:    map[string]string{"moto": "creates the table"},
			check: func(ctx context.Context, t *testing.T, c *dynamodb.Client, _ string) (string, bool) {
				_, err := createTable(ctx, t, c, func(in *dynamodb.CreateTableInput) { in.TableName = aws.String("df") })
				return refused(err)
			},
		},
		{
			name:       "CreateTable answers before the table is ACTIVE",
			documented: "TableStatus CREATING",
			differs:    map[string]string{"moto": "ACTIVE at once"},
			check: func(ctx context.Context, t *testing.T, c *dynamodb.Client, _ string) (string, bool) {
				out, err := createTable(ctx, t, c, nil)
				if err != nil {
					return errorCode(err), false
				}
				return string(out.TableDescription.TableStatus), out.TableDescription.TableStatus == types.TableStatusCreating
			},
		},
		{
			name:       "A stream requested with the table is kept",
			documented: "DescribeTable has the StreamSpecification and a LatestStreamArn",
			differs:    map[string]string{"dynalite": "accepts the request and keeps no stream"},
			check: func(ctx context.Context, t *testing.T, c *dynamodb.Client, _ string) (string, bool) {
				out, err := createTable(ctx, t, c, func(in *dynamodb.CreateTableInput) {
					in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
				})
				if err != nil {
					return errorCode(err), false
				}
				d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: out.TableDescription.TableName})
				if err != nil {
					return errorCode(err), false
				}
				s := d.Table.StreamSpecification
				ok := s != nil && aws.ToBool(s.StreamEnabled) && s.StreamViewType == types.StreamViewTypeNewAndOldImages && aws.ToString(d.Table.LatestStreamArn) != ""
				return fmt.Sprintf("stream %v, ARN %q", s != nil, aws.ToString(d.Table.LatestStreamArn)), ok
			},
		},
		{
			name:       "StreamViewType is one of four values",
			documented: "ValidationException for another",
			differs:    map[string]string{"moto": "keeps the stream with view type BOGUS", "dynalite": "accepts it (and keeps no stream)"},
			check: func(ctx context.Context, t *testing.T, c *dynamodb.Client, _ string) (string, bool) {
				_, err := createTable(ctx, t, c, func(in *dynamodb.CreateTableInput) {
					in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: "BOGUS"}
				})
				return refused(err)
			},
		},
		{
			name:       "UpdateTimeToLive enables TTL",
			documented: "accepted",
			differs:    map[string]string{"dynalite": "UnknownOperationException"},
			check: func(ctx context.Context, _ *testing.T, c *dynamodb.Client, table string) (string, bool) {
				_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
					TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ExpiresAt"), Enabled: aws.Bool(true)}})
				return errorCode(err), err == nil
			},
		},
		{
			name:       "TransactWriteItems takes at most 100 actions",
			documented: "ValidationException for 101",
			differs:    map[string]string{"dynalite": "UnknownOperationException: no transactions"},
			check: func(ctx context.Context, _ *testing.T, c *dynamodb.Client, table string) (string, bool) {
				items := make([]types.TransactWriteItem, 101)
				for i := range items {
					items[i] = types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: key("t101", fmt.Sprint(i))}}
				}
				_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
				return refused(err)
			},
		},
		{
			name:       "TransactWriteItems with a ClientRequestToken already used is not applied again",
			documented: "success, and no change: the item keeps the later write",
			differs:    map[string]string{"moto": "applies the transaction again", "dynalite": "UnknownOperationException: no transactions"},
			check: func(ctx context.Context, _ *testing.T, c *dynamodb.Client, table string) (string, bool) {
				item := func(v string) map[string]types.AttributeValue {
					it := key("idem", "x")
					it["v"] = &types.AttributeValueMemberN{Value: v}
					return it
				}
				txn := &dynamodb.TransactWriteItemsInput{
					ClientRequestToken: aws.String(fmt.Sprintf("dynafold-%d", time.Now().UnixNano())),
					TransactItems:      []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(table), Item: item("1")}}},
				}
				if _, err := c.TransactWriteItems(ctx, txn); err != nil {
					return errorCode(err), false
				}
				if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("2")}); err != nil {
					return errorCode(err), false
				}
				if _, err := c.TransactWriteItems(ctx, txn); err != nil {
					return errorCode(err), false
				}
				got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("idem", "x"), ConsistentRead: aws.Bool(true)})
				if err != nil {
					return errorCode(err), false
				}
				v := got.Item["v"].(*types.AttributeValueMemberN).Value
				return "v = " + v, v == "2"
			},
		},
		{
			name:       "A global index key may have several partition key attributes",
			documented: "accepted (up to four)",
			differs:    map[string]string{"dynalite": "ValidationException: the second KeySchemaElement is not a RANGE key type"},
			check: func(ctx context.Context, t *testing.T, c *dynamodb.Client, _ string) (string, bool) {
				_, err := createTable(ctx, t, c, func(in *dynamodb.CreateTableInput) {
					in.AttributeDefinitions = append(in.AttributeDefinitions,
						types.AttributeDefinition{AttributeName: aws.String("Tenant"), AttributeType: types.ScalarAttributeTypeS},
						types.AttributeDefinition{AttributeName: aws.String("Region"), AttributeType: types.ScalarAttributeTypeS})
					in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{
						IndexName: aws.String("ByTenantRegion"),
						KeySchema: []types.KeySchemaElement{
							{AttributeName: aws.String("Tenant"), KeyType: types.KeyTypeHash},
							{AttributeName: aws.String("Region"), KeyType: types.KeyTypeHash},
						},
						Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
					}}
				})
				return errorCode(err), err == nil
			},
		},
	}
}

// TestEmulatorDifferences checks each behaviour on each emulator; see
// docs/emulators.md.
func TestEmulatorDifferences(t *testing.T) {
	for _, e := range testenv.Emulators() {
		t.Run(e.Name, func(t *testing.T) {
			ctx := context.Background()
			c := e.Client(t)
			table := testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, c, table)
			_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
				TableName: aws.String(table),
				AttributeDefinitions: []types.AttributeDefinition{
					{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS},
					{AttributeName: aws.String("SK"), AttributeType: types.ScalarAttributeTypeS},
				},
				KeySchema:   []types.KeySchemaElement{{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange}},
				BillingMode: types.BillingModePayPerRequest,
			})
			require.NoError(t, err)
			require.NoError(t, dynamodb.NewTableExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, time.Minute))
			for _, b := range behaviours() {
				t.Run(b.name, func(t *testing.T) {
					observed, ok := b.check(ctx, t, c, table)
					instead, known := b.differs[e.Name]
					switch {
					case b.unsteady[e.Name] != "":
						t.Logf("documented: %s; %s: %s (observed: %s)", b.documented, e.Name, b.unsteady[e.Name], observed)
					case known && ok:
						t.Errorf("%s now behaves as documented (%s): drop it from differs and from docs/emulators.md", e.Name, b.documented)
					case known:
						t.Logf("documented: %s; %s: %s (observed: %s)", b.documented, e.Name, instead, observed)
					case !ok:
						t.Errorf("documented: %s; %s: %s. If the emulator is at fault, add it to differs and to docs/emulators.md", b.documented, e.Name, observed)
					}
				})
			}
		})
	}
}
