package sink

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/ddbjson"
	"github.com/dynafold/dynafold/internal/sdkcapture"
	"github.com/dynafold/dynafold/mapping"
)

// benchBatch is 25 portfolio-shaped items (keys, a type, a GSI key, three
// attributes), pre-encoded as the builder leaves them.
func benchBatch() []*mapping.Item {
	batch := make([]*mapping.Item, MaxBatchItems)
	for i := range batch {
		attrs := map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: fmt.Sprintf("SRV#Srv%dn2", i)}, "SK": &types.AttributeValueMemberS{Value: fmt.Sprintf("DB#Db%dn2d1", i)},
			"type": &types.AttributeValueMemberS{Value: "database"}, "GSI1PK": &types.AttributeValueMemberS{Value: "DB#Db"},
			"name": &types.AttributeValueMemberS{Value: "orders"}, "size_gb": &types.AttributeValueMemberN{Value: "123"},
			"engine": &types.AttributeValueMemberS{Value: "postgres"},
		}
		batch[i] = &mapping.Item{Key: fmt.Sprint(i), Attrs: attrs, Size: mapping.ItemSize(attrs), Body: ddbjson.AppendItem(nil, attrs)}
	}
	return batch
}

// BenchmarkBatchWriteCall is one BatchWriteItem call through a real SDK
// client (signing included, the network replaced by a recorder): the
// SDK serializing the attribute tree, against the pre-encoded body.
func BenchmarkBatchWriteCall(b *testing.B) {
	batch := benchBatch()
	client := sdkcapture.NewClient(&sdkcapture.Recorder{})
	ctx := context.Background()
	b.Run("sdk-serializer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems:           map[string][]types.WriteRequest{"t": writeRequests(batch)},
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			}, noRetry)
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pre-encoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems:           map[string][]types.WriteRequest{"t": writeRequests(batch)},
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			}, noRetry, withBody(appendBatch(nil, "t", batch)))
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
