package sink_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/sink/sinktest"
)

// table is an in-memory BatchWriteItem that stores every put; what it
// holds is durable.
type table struct {
	mu    sync.Mutex
	items map[string]int
}

func (tb *table) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, reqs := range in.RequestItems {
		for _, r := range reqs {
			it := r.PutRequest.Item
			tb.items[it["PK"].(*types.AttributeValueMemberS).Value+"\x00"+it["SK"].(*types.AttributeValueMemberS).Value]++
		}
	}
	return &dynamodb.BatchWriteItemOutput{}, nil
}

func (tb *table) durable() map[string]int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	out := make(map[string]int, len(tb.items))
	for k, v := range tb.items {
		out[k] = v
	}
	return out
}

func TestDynamoWriterConformance(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinktest.Subject {
		tb := &table{items: map[string]int{}}
		schema := &mapping.TableSchema{Name: "t", PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}, SK: &mapping.KeyAttr{Name: "SK", Type: mapping.TypeS}}
		return sinktest.Subject{Sink: sink.NewDynamoWriter(tb, schema, sink.WriterOptions{}), Durable: tb.durable}
	})
}
