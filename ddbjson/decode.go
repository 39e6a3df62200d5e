package ddbjson

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/schemas"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// The SDK's own deserializer reads DynamoDB JSON: an item is framed as the
// one unprocessed put of a BatchWriteItem answer and parsed by the client
// protocol's DeserializeResponse, so that Decode reads exactly what the SDK
// would, with no decoder of our own to keep in step.
var (
	sdkProtocol    = dynamodb.New(dynamodb.Options{Region: "us-east-1"}).Options().Protocol
	batchWriteOp   = smithy.NewOperationSchema(schemas.BatchWriteItem, schemas.BatchWriteItemInput, schemas.BatchWriteItemOutput)
	decodePrefix   = []byte(`{"UnprocessedItems":{"t":[{"PutRequest":{"Item":`)
	decodeSuffix   = []byte(`}}]}}`)
	errNotAnObject = fmt.Errorf("not a DynamoDB JSON item")
)

// Decode parses one item (or key) in DynamoDB JSON, as AppendItem writes
// it, into attribute values. It is for the paths off the hot path that
// need an encoded item's attributes (comparing it with the table, for
// instance).
func Decode(item []byte) (map[string]types.AttributeValue, error) {
	trimmed := bytes.TrimSpace(item)
	if len(trimmed) < 2 || trimmed[0] != '{' {
		return nil, errNotAnObject
	}
	body := make([]byte, 0, len(decodePrefix)+len(trimmed)+len(decodeSuffix))
	body = append(append(append(body, decodePrefix...), trimmed...), decodeSuffix...)
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}}
	out := &dynamodb.BatchWriteItemOutput{}
	if err := sdkProtocol.DeserializeResponse(context.Background(), batchWriteOp, dynamodb.TypeRegistry, resp, out); err != nil {
		return nil, fmt.Errorf("decoding a DynamoDB JSON item: %w", err)
	}
	reqs := out.UnprocessedItems["t"]
	if len(reqs) != 1 || reqs[0].PutRequest == nil || reqs[0].PutRequest.Item == nil {
		return nil, errNotAnObject
	}
	return reqs[0].PutRequest.Item, nil
}
