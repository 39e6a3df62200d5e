package ddbnoop

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func requireAPIError(t *testing.T, err error, code, msgPart string) {
	t.Helper()
	var apiErr smithy.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, code, apiErr.ErrorCode())
	assert.Contains(t, apiErr.ErrorMessage(), msgPart)
}

func TestBatchWriteCountsAndSizes(t *testing.T) {
	srv, c := newTestServer(t, Options{Tables: []TableSpec{testTable}})
	ctx := context.Background()

	// Sizes: every item has PK "p"(2+1) and SK "sN"(2+2) = 7 bytes of key.
	key := func(sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"PK": s("p"), "SK": s(sk)}
	}
	withAttr := func(sk, name string, v types.AttributeValue) map[string]types.AttributeValue {
		it := key(sk)
		it[name] = v
		return it
	}
	// 7 + len("d") + 1015 bytes = 1023: "é" is 2 bytes of UTF-8.
	accented := withAttr("s1", "d", s(strings.Repeat("é", 507)+"a"))
	exactKB := withAttr("s2", "d", s(strings.Repeat("é", 507)+"ab"))                // 1024 bytes
	overKB := withAttr("s3", "d", s(strings.Repeat("é", 508)+"a"))                  // 1025 bytes
	number := withAttr("s4", "n", &types.AttributeValueMemberN{Value: "-123.4500"}) // 7+1+(6 digits->4)
	nested := withAttr("s5", "m", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"a": &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberN{Value: "12345"}, // 4
			&types.AttributeValueMemberBOOL{Value: true}, // 1
		}},
		"b": &types.AttributeValueMemberB{Value: []byte{1, 2, 3}}, // 3
	}})
	// m: 1 + 3 + (1+1+ (3 + (1+4) + (1+1))) + (1+1+3) = 1+3+12+5 = 21
	emoji := withAttr("s6", "e", &types.AttributeValueMemberSS{Value: []string{"😀", "日本"}}) // 7+1+(4+6)
	sizes := []int{1023, 1024, 1025, 7 + 1 + 4, 7 + 21, 7 + 1 + 10}
	units := []int{1, 1, 2, 1, 1, 1}

	out, err := batchWrite(ctx, c, "items", puts(accented, exactKB, overKB, number, nested, emoji))
	require.NoError(t, err)
	assert.Empty(t, out.UnprocessedItems)
	require.Len(t, out.ConsumedCapacity, 1)
	assert.Equal(t, "items", aws.ToString(out.ConsumedCapacity[0].TableName))
	assert.Equal(t, 7.0, aws.ToFloat64(out.ConsumedCapacity[0].CapacityUnits))

	var wantBytes, wantUnits int
	for i := range sizes {
		wantBytes += sizes[i]
		wantUnits += units[i]
	}
	st := srv.Stats()
	assert.EqualValues(t, 1, st.Requests)
	assert.EqualValues(t, 1, st.BatchWriteRequests)
	assert.EqualValues(t, 6, st.Items)
	assert.EqualValues(t, wantBytes, st.ItemBytes)
	assert.EqualValues(t, wantUnits, st.WriteUnits)
	assert.EqualValues(t, 0, st.GSIWriteUnits)
	require.Len(t, st.Series, 1)
	assert.EqualValues(t, 6, st.Series[0].Items)

	// A 400 KB item costs 400 units; deletes cost 1.
	big := itemOfSize("p", "big", 400*1024)
	out, err = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
		RequestItems: map[string][]types.WriteRequest{"items": {
			{PutRequest: &types.PutRequest{Item: big}},
			{DeleteRequest: &types.DeleteRequest{Key: key("gone")}},
		}},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	require.NoError(t, err)
	assert.Equal(t, 401.0, aws.ToFloat64(out.ConsumedCapacity[0].CapacityUnits))
	assert.Equal(t, 401.0, aws.ToFloat64(out.ConsumedCapacity[0].Table.CapacityUnits))
	assert.EqualValues(t, 8, srv.Stats().Items)
}

func TestConsumedCapacityIndexes(t *testing.T) {
	_, c := newTestServer(t, Options{Tables: []TableSpec{testTable}})
	withGSI := itemOfSize("p", "a", 2000) // 2 units, projected into GSI1
	withGSI["GSI1PK"] = s("g")
	noGSI := itemOfSize("p", "b", 100)
	out, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
		RequestItems:           map[string][]types.WriteRequest{"items": puts(withGSI, noGSI)},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	require.NoError(t, err)
	require.Len(t, out.ConsumedCapacity, 1)
	cc := out.ConsumedCapacity[0]
	assert.Equal(t, 5.0, aws.ToFloat64(cc.CapacityUnits)) // 2 + 1 table, 2 GSI
	assert.Equal(t, 3.0, aws.ToFloat64(cc.Table.CapacityUnits))
	require.Contains(t, cc.GlobalSecondaryIndexes, "GSI1")
	assert.Equal(t, 2.0, aws.ToFloat64(cc.GlobalSecondaryIndexes["GSI1"].CapacityUnits))
}

func TestBatchWriteValidation(t *testing.T) {
	srv, c := newTestServer(t, Options{Tables: []TableSpec{testTable}})
	ctx := context.Background()

	_, err := batchWrite(ctx, c, "items", kbItems("p", 0, 26))
	requireAPIError(t, err, "ValidationException", "Too many items requested for the BatchWriteItem call")

	// 26 across two tables is too many as well.
	_, err = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		"items": kbItems("p", 0, 13), "other": kbItems("p", 0, 13),
	}})
	require.Error(t, err)

	dup := append(kbItems("p", 0, 3), kbItems("p", 1, 1)...)
	_, err = batchWrite(ctx, c, "items", dup)
	requireAPIError(t, err, "ValidationException", "Provided list of item keys contains duplicates")

	// A put and a delete of the same key are duplicates too.
	_, err = batchWrite(ctx, c, "items", []types.WriteRequest{
		{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"PK": s("a"), "SK": s("b")}}},
		{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{"PK": s("a"), "SK": s("b")}}},
	})
	requireAPIError(t, err, "ValidationException", "duplicates")

	_, err = batchWrite(ctx, c, "items", puts(map[string]types.AttributeValue{"PK": s("a")}))
	requireAPIError(t, err, "ValidationException", "Missing the key SK in the item")

	_, err = batchWrite(ctx, c, "items", puts(map[string]types.AttributeValue{
		"PK": s("a"), "SK": &types.AttributeValueMemberN{Value: "1"}}))
	requireAPIError(t, err, "ValidationException", "Type mismatch for key SK expected: S actual: N")

	_, err = batchWrite(ctx, c, "items", puts(map[string]types.AttributeValue{"PK": s(""), "SK": s("b")}))
	requireAPIError(t, err, "ValidationException", "empty string value")

	_, err = batchWrite(ctx, c, "items", []types.WriteRequest{{DeleteRequest: &types.DeleteRequest{
		Key: map[string]types.AttributeValue{"PK": s("a"), "SK": s("b"), "extra": s("c")}}}})
	requireAPIError(t, err, "ValidationException", "The provided key element does not match the schema")

	_, err = batchWrite(ctx, c, "items", puts(itemOfSize("a", "b", 400*1024+1)))
	requireAPIError(t, err, "ValidationException", "Item size has exceeded the maximum allowed size")

	_, err = batchWrite(ctx, c, "nosuchtable", kbItems("p", 0, 1))
	var notFound *types.ResourceNotFoundException
	require.ErrorAs(t, err, &notFound)

	st := srv.Stats()
	assert.Zero(t, st.Items)
	assert.EqualValues(t, 10, st.Errors)
}

func TestCreateDescribeTable(t *testing.T) {
	_, c := newTestServer(t, Options{})
	ctx := context.Background()
	in := &dynamodb.CreateTableInput{
		TableName: aws.String("orders"),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange},
		},
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("SK"), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String("G"), AttributeType: types.ScalarAttributeTypeB},
			{AttributeName: aws.String("L"), AttributeType: types.ScalarAttributeTypeS},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("G"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{
			IndexName: aws.String("byL"),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("L"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
		BillingMode: types.BillingModePayPerRequest,
	}
	created, err := c.CreateTable(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, types.TableStatusActive, created.TableDescription.TableStatus)

	_, err = c.CreateTable(ctx, in)
	var inUse *types.ResourceInUseException
	require.ErrorAs(t, err, &inUse)

	require.NoError(t, dynamodb.NewTableExistsWaiter(c).Wait(ctx,
		&dynamodb.DescribeTableInput{TableName: aws.String("orders")}, time.Second))
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("orders")})
	require.NoError(t, err)
	tbl := d.Table
	assert.Equal(t, "orders", aws.ToString(tbl.TableName))
	assert.Equal(t, types.TableStatusActive, tbl.TableStatus)
	assert.Equal(t, in.KeySchema, tbl.KeySchema)
	assert.Equal(t, in.AttributeDefinitions, tbl.AttributeDefinitions)
	require.Len(t, tbl.GlobalSecondaryIndexes, 1)
	assert.Equal(t, "byG", aws.ToString(tbl.GlobalSecondaryIndexes[0].IndexName))
	assert.Equal(t, in.GlobalSecondaryIndexes[0].KeySchema, tbl.GlobalSecondaryIndexes[0].KeySchema)
	assert.Equal(t, types.ProjectionTypeKeysOnly, tbl.GlobalSecondaryIndexes[0].Projection.ProjectionType)
	assert.Equal(t, types.IndexStatusActive, tbl.GlobalSecondaryIndexes[0].IndexStatus)
	require.Len(t, tbl.LocalSecondaryIndexes, 1)
	assert.Equal(t, in.LocalSecondaryIndexes[0].KeySchema, tbl.LocalSecondaryIndexes[0].KeySchema)
	assert.Equal(t, types.BillingModePayPerRequest, tbl.BillingModeSummary.BillingMode)
	require.NotNil(t, tbl.ProvisionedThroughput)
	assert.False(t, aws.ToTime(tbl.CreationDateTime).IsZero())

	// The declared key types are enforced: SK is a number here.
	_, err = batchWrite(ctx, c, "orders", puts(map[string]types.AttributeValue{
		"PK": s("a"), "SK": &types.AttributeValueMemberN{Value: "1"}, "G": s("not binary")}))
	requireAPIError(t, err, "ValidationException", "Type mismatch for Index Key G")

	lt, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
	require.NoError(t, err)
	assert.Equal(t, []string{"orders"}, lt.TableNames)

	_, err = c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("orders")})
	require.NoError(t, err)
	_, err = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("orders")})
	var notFound *types.ResourceNotFoundException
	require.ErrorAs(t, err, &notFound)
}

func TestPredeclaredTableAndReads(t *testing.T) {
	_, c := newTestServer(t, Options{WCU: 500, Tables: []TableSpec{testTable}})
	ctx := context.Background()
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("items")})
	require.NoError(t, err)
	assert.Equal(t, types.BillingModeProvisioned, d.Table.BillingModeSummary.BillingMode)
	assert.EqualValues(t, 500, aws.ToInt64(d.Table.ProvisionedThroughput.WriteCapacityUnits))
	require.Len(t, d.Table.GlobalSecondaryIndexes, 1)
	assert.Equal(t, []types.KeySchemaElement{
		{AttributeName: aws.String("GSI1PK"), KeyType: types.KeyTypeHash},
		{AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange},
	}, d.Table.GlobalSecondaryIndexes[0].KeySchema)
	assert.Len(t, d.Table.AttributeDefinitions, 3)

	q, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("items"),
		KeyConditionExpression:    aws.String("PK = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("x")}})
	require.NoError(t, err)
	assert.Empty(t, q.Items)
	assert.Zero(t, q.Count)
	sc, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("items")})
	require.NoError(t, err)
	assert.Empty(t, sc.Items)
	bg, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		"items": {Keys: []map[string]types.AttributeValue{{"PK": s("a"), "SK": s("b")}}}}})
	require.NoError(t, err)
	assert.Empty(t, bg.Responses["items"])
	assert.Empty(t, bg.UnprocessedKeys)

	ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("items")})
	require.NoError(t, err)
	assert.Equal(t, types.TimeToLiveStatusDisabled, ttl.TimeToLiveDescription.TimeToLiveStatus)
	_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("items"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)}})
	require.NoError(t, err)
	ttl, err = c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("items")})
	require.NoError(t, err)
	assert.Equal(t, types.TimeToLiveStatusEnabled, ttl.TimeToLiveDescription.TimeToLiveStatus)
	assert.Equal(t, "exp", aws.ToString(ttl.TimeToLiveDescription.AttributeName))
}

func TestUnknownOperationAndStatsEndpoint(t *testing.T) {
	srv := New(Options{Tables: []TableSpec{testTable}})
	hs := httptest.NewServer(srv)
	defer hs.Close()

	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/", strings.NewReader("{}"))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.FlyToTheMoon")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(body), "#UnknownOperationException")

	_, err = batchWrite(context.Background(), newClient(hs.URL), "items", kbItems("p", 0, 5))
	require.NoError(t, err)

	var st Stats
	resp, err = http.Get(hs.URL + "/stats")
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	assert.EqualValues(t, 2, st.Requests)
	assert.EqualValues(t, 5, st.Items)
	assert.EqualValues(t, 5, st.WriteUnits)

	resp, err = http.Post(hs.URL+"/stats/reset", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, Stats{}, srv.Stats())
}

func TestStartAndStop(t *testing.T) {
	url, stop, err := Start(Options{Tables: []TableSpec{testTable}})
	require.NoError(t, err)
	_, err = batchWrite(context.Background(), newClient(url), "items", kbItems("p", 0, 25))
	require.NoError(t, err)
	stop()
	_, err = http.Get(url + "/stats")
	assert.Error(t, err)

	_, _, err = Start(Options{Tables: []TableSpec{{Name: "x", PK: "PK"}}}) // name too short
	assert.Error(t, err)
}

func TestParseIndexSpec(t *testing.T) {
	spec, err := ParseIndexSpec("GSI1:GSI1PK:SK")
	require.NoError(t, err)
	assert.Equal(t, IndexSpec{Name: "GSI1", PK: "GSI1PK", SK: "SK"}, spec)
	spec, err = ParseIndexSpec("GSI2:G2")
	require.NoError(t, err)
	assert.Equal(t, IndexSpec{Name: "GSI2", PK: "G2"}, spec)
	for _, bad := range []string{"", "GSI1", "GSI1::SK", "a:b:c:d"} {
		_, err := ParseIndexSpec(bad)
		assert.Error(t, err, bad)
	}
}
