package sink

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
)

// Remover is a sink that can take back items it wrote: the pipeline uses
// it to delete the parts of a split aggregate whose row failed, so that no
// half-written aggregate stays behind.
type Remover interface {
	// Remove deletes the items, in the order of the calls: a call returns
	// once every item of it is deleted (deleting an item that is not there
	// succeeds), or with the error that stopped it. It may be called
	// concurrently with Write.
	Remove(ctx context.Context, items []*mapping.Item) error
}

var _ Remover = (*DynamoWriter)(nil)

// Remove implements Remover with BatchWriteItem deletes, retried as the
// Deleter retries them.
func (w *DynamoWriter) Remove(ctx context.Context, items []*mapping.Item) error {
	keys := make([]map[string]types.AttributeValue, len(items))
	for i, it := range items {
		keys[i] = w.schema.KeyAttributes(it)
	}
	d := NewDeleter(w.api, w.table)
	d.backoff, d.sleep = w.backoff, w.sleep
	return d.Delete(ctx, keys)
}
