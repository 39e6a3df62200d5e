package incremental

import (
	"context"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
)

// DeleteSink is a sink that deletes the items it is given instead of
// writing them: the pipeline builds the items of soft-deleted rows, and
// their keys are deleted. Deleting an absent key succeeds, so a resumed
// run may delete a key twice.
type DeleteSink struct {
	sink.AcksOnWrite
	del     *sink.Deleter
	table   *mapping.TableSchema
	deleted atomic.Int64
}

var _ sink.Sink = (*DeleteSink)(nil)

// NewDeleteSink deletes through del from a table whose key attributes are
// table.PK and table.SK.
func NewDeleteSink(del *sink.Deleter, table *mapping.TableSchema) *DeleteSink {
	return &DeleteSink{del: del, table: table}
}

// Write implements sink.Sink: it deletes every item's key.
func (s *DeleteSink) Write(ctx context.Context, batch []*mapping.Item, res sink.Results) error {
	keys := make([]map[string]types.AttributeValue, 0, len(batch))
	for _, it := range batch {
		keys = append(keys, s.table.KeyAttributes(it))
	}
	if err := s.del.Delete(ctx, keys); err != nil {
		return err
	}
	s.deleted.Add(int64(len(batch)))
	res.Acked(batch)
	return nil
}

// Stats implements sink.Sink; Items counts the items deleted.
func (s *DeleteSink) Stats() sink.Stats { return sink.Stats{Items: s.deleted.Load()} }

// Deleted is how many items were deleted.
func (s *DeleteSink) Deleted() int64 { return s.deleted.Load() }
