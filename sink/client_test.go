package sink

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/ddbjson"
	"github.com/dynafold/dynafold/internal/ddbnoop"
	"github.com/dynafold/dynafold/mapping"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestClientKeepsConnectionsAlive: writers sending batches at once, more
// of them than Go's default of two idle connections per host, each open a
// connection once and keep it: the client's idle pool holds at least one
// per writer, so bursts never reconnect. The no-op endpoint counts the
// connections it accepts.
func TestClientKeepsConnectionsAlive(t *testing.T) {
	const writers, batches = 24, 60
	srv := ddbnoop.New(ddbnoop.Options{Tables: []ddbnoop.TableSpec{{Name: "conns", PK: "PK"}}})
	url, stop, err := srv.Start()
	require.NoError(t, err)
	defer stop()
	ctx := context.Background()
	client, err := NewClient(ctx, ClientOptions{Endpoint: url, MaxConns: writers})
	require.NoError(t, err)
	w := NewDynamoWriter(client, &mapping.TableSchema{Name: "conns", PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}}, WriterOptions{})
	res := &countingResults{}
	g, gctx := errgroup.WithContext(ctx)
	for i := range writers {
		g.Go(func() error {
			for j := range batches {
				batch := make([]*mapping.Item, MaxBatchItems)
				for k := range batch {
					key := fmt.Sprintf("w%d-b%d-i%d", i, j, k)
					attrs := map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: key}}
					batch[k] = &mapping.Item{Key: key, PKLen: len(key), Attrs: attrs, Size: mapping.ItemSize(attrs), Body: ddbjson.AppendItem(nil, attrs)}
				}
				if err := w.Write(gctx, batch, res); err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	require.Equal(t, writers*batches*MaxBatchItems, res.acked)
	st := srv.Stats()
	require.EqualValues(t, writers*batches*MaxBatchItems, st.Items)
	// One per writer, and a few more: a connection goes back to the pool
	// just after its response is read, so a writer's next request may
	// dial, and the connection it dialled then waits in the pool. At most
	// 2·writers are open at once (in use, idle); with Go's default of two
	// idle connections per host this run opens hundreds.
	t.Logf("%d connections opened for %d requests", st.ConnectionsOpened, st.BatchWriteRequests)
	require.LessOrEqual(t, st.ConnectionsOpened, int64(3*writers), "connections opened for %d requests", st.BatchWriteRequests)
}
