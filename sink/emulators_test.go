package sink_test

// The sink against the two DynamoDB-compatible servers the tests run,
// dynalite and moto's server, through the client and write path the CLI
// uses (sink.NewClient, the reach guard, the direct sender): the
// conformance suite, reads and deletes, and table management. moto takes
// about 1,700 writes/s, so every case here is small.

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
	"github.com/dynafold/dynafold/retry"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/sink/sinktest"
)

// liveClient is the client the CLI makes for endpoint.
func liveClient(t *testing.T, endpoint string) *dynamodb.Client {
	t.Helper()
	c, err := sink.NewClient(context.Background(), sink.ClientOptions{Endpoint: endpoint, Region: "us-east-1"})
	require.NoError(t, err)
	return c
}

// liveSchema is a table named for the test with string keys PK and SK;
// edit, when set, adds to it.
func liveSchema(t *testing.T, edit func(*mapping.TableSchema)) *mapping.TableSchema {
	s := &mapping.TableSchema{
		Name:    testenv.NewTableName(t),
		PK:      mapping.KeyAttr{Name: "PK", Type: mapping.TypeS},
		SK:      &mapping.KeyAttr{Name: "SK", Type: mapping.TypeS},
		Billing: "PAY_PER_REQUEST",
	}
	if edit != nil {
		edit(s)
	}
	return s
}

// liveTable creates the table with table create's code and deletes it
// when the test ends.
func liveTable(t *testing.T, c *dynamodb.Client, s *mapping.TableSchema) *sink.CreateResult {
	t.Helper()
	testenv.DeleteTableOnCleanup(t, c, s.Name)
	res, err := sink.CreateTable(context.Background(), c, s, time.Minute)
	require.NoError(t, err)
	require.True(t, res.Created)
	return res
}

// scanKeys is what the table holds, by Item.Key, read consistently. It
// reports a failed read with t.Errorf (the suite calls it from its
// writers' goroutines) and returns nil.
func scanKeys(t *testing.T, c *dynamodb.Client, table string) map[string]int {
	out := map[string]int{}
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Errorf("scanning %s: %v", table, err)
			return nil
		}
		for _, it := range page.Items {
			out[it["PK"].(*types.AttributeValueMemberS).Value+"\x00"+it["SK"].(*types.AttributeValueMemberS).Value]++
		}
	}
	return out
}

func TestSinkAgainstEmulators(t *testing.T) {
	for _, e := range testenv.Emulators() {
		t.Run(e.Name, func(t *testing.T) {
			c := liveClient(t, e.Endpoint(t))

			// 200 items from 2 writers: the suite reads the whole table
			// at each acknowledgement.
			t.Run("Conformance", func(t *testing.T) {
				sinktest.RunSize(t, sinktest.Size{Writers: 2, Batches: 4}, func(t *testing.T) sinktest.Subject {
					s := liveSchema(t, nil)
					liveTable(t, c, s)
					return sinktest.Subject{
						Sink:    sink.NewDynamoWriter(sink.NewReachGuard(c), s, sink.WriterOptions{}),
						Durable: func() map[string]int { return scanKeys(t, c, s.Name) },
					}
				})
			})

			t.Run("ReadRemoveDelete", func(t *testing.T) {
				ctx := context.Background()
				s := liveSchema(t, nil)
				liveTable(t, c, s)
				w := sink.NewDynamoWriter(sink.NewReachGuard(c), s, sink.WriterOptions{})
				items := sinktest.Batch("r", 30)
				require.NoError(t, w.Write(ctx, items[:25], failOnReject{t}))
				require.NoError(t, w.Write(ctx, items[25:], failOnReject{t}))
				require.NoError(t, w.Flush(ctx))
				st := w.Stats()
				require.EqualValues(t, 30, st.Items)
				require.Zero(t, st.UnprocessedItems)

				keys := make([]map[string]types.AttributeValue, 0, 31)
				for _, it := range items[:20] {
					keys = append(keys, s.KeyAttributes(it))
				}
				keys = append(keys, map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "absent"}, "SK": &types.AttributeValueMemberS{Value: "x"}})
				var got int
				require.NoError(t, sink.GetItems(ctx, c, s.Name, keys, retry.Policy{Attempts: 3}, func(map[string]types.AttributeValue) { got++ }))
				require.Equal(t, 20, got, "every key present is returned and the absent one is not")

				require.NoError(t, w.Remove(ctx, items[:5]))
				require.NoError(t, w.Remove(ctx, items[:1]), "removing an item that is not there succeeds")
				require.NoError(t, sink.NewDeleter(c, s.Name).Delete(ctx, keys[5:10]))
				require.Len(t, scanKeys(t, c, s.Name), 20)
				require.NoError(t, w.Close())
			})

			t.Run("TableCreate", func(t *testing.T) {
				ctx := context.Background()
				s := liveSchema(t, func(s *mapping.TableSchema) {
					s.Indexes = []*mapping.Index{
						{Name: "GSI1", Global: true, PK: mapping.KeyAttr{Name: "GSI1PK", Type: mapping.TypeS}, SK: &mapping.KeyAttr{Name: "Rank", Type: mapping.TypeN}, Projection: "INCLUDE", Include: []string{"Name"}},
						{Name: "ByName", PK: s.PK, SK: &mapping.KeyAttr{Name: "Name", Type: mapping.TypeS}, Projection: "KEYS_ONLY"},
					}
					s.TTLAttribute = "ExpiresAt"
				})
				res := liveTable(t, c, s)
				require.Empty(t, res.State.Differences)
				require.Equal(t, "ACTIVE", res.State.Status)
				again, err := sink.CreateTable(ctx, c, s, time.Minute)
				require.NoError(t, err, "an existing table that matches is left as it is")
				require.False(t, again.Created)

				other := *s
				other.Indexes = []*mapping.Index{{Name: "GSI1", Global: true, PK: mapping.KeyAttr{Name: "GSI1PK", Type: mapping.TypeS}, Projection: "ALL"}}
				_, err = sink.CreateTable(ctx, c, &other, time.Minute)
				require.ErrorIs(t, err, sink.ErrTableMismatch)
				require.ErrorContains(t, err, "index GSI1 has sort key Rank but the mapping declares none")
				require.ErrorContains(t, err, "index GSI1 projects INCLUDE in the table but ALL in the mapping")
			})
		})
	}
}

// failOnReject takes acknowledgements and fails the test on a rejection.
type failOnReject struct{ t *testing.T }

func (failOnReject) Acked([]*mapping.Item) {}
func (r failOnReject) Rejected(it *mapping.Item, err error) {
	r.t.Errorf("item %q rejected: %v", it.Key, err)
}
func (failOnReject) Retried([]*mapping.Item, bool) {}
