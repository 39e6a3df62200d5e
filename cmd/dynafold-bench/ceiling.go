package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/sink"
)

// ceilingResult is what the ceiling child prints.
type ceilingResult struct {
	Items   int64   `json:"items"`
	Seconds float64 `json:"seconds"`
}

func ceilingCommand() *cobra.Command {
	var endpoint, table string
	var items, writers int
	cmd := &cobra.Command{
		Use:   "ceiling",
		Short: "Write pre-built portfolio-shaped items through the SDK (no source, no mapping)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := ceiling(cmd.Context(), endpoint, table, items, writers)
			if err != nil {
				return err
			}
			return json.NewEncoder(os.Stdout).Encode(res)
		},
	}
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "DynamoDB endpoint")
	cmd.Flags().StringVar(&table, "table", "", "table")
	cmd.Flags().IntVar(&items, "items", 1_000_000, "items to write")
	cmd.Flags().IntVar(&writers, "writers", 8, "requests in flight, as dynafold's --writers")
	return cmd
}

// ceiling measures what the endpoint and the SDK can do together: the
// same client setup as dynafold (sink.NewClient), the same batch size and
// concurrency, items of the same shape, but no source and no mapping. The
// batches are built before the clock starts and reused in rotation.
func ceiling(ctx context.Context, endpoint, table string, items, writers int) (*ceilingResult, error) {
	client, err := sink.NewClient(ctx, sink.ClientOptions{Endpoint: endpoint, MaxConns: writers})
	if err != nil {
		return nil, err
	}
	const distinct = 4000 // batches built up front: 100,000 items
	batches := make([][]types.WriteRequest, distinct)
	for b := range batches {
		reqs := make([]types.WriteRequest, sink.MaxBatchItems)
		for i := range reqs {
			reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: sampleItem(b*sink.MaxBatchItems + i)}}
		}
		batches[b] = reqs
	}
	total := (items + sink.MaxBatchItems - 1) / sink.MaxBatchItems
	var next atomic.Int64
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for w := 0; w < writers; w++ {
		g.Go(func() error {
			for {
				n := next.Add(1) - 1
				if n >= int64(total) {
					return nil
				}
				out, err := client.BatchWriteItem(gctx, &dynamodb.BatchWriteItemInput{
					RequestItems:           map[string][]types.WriteRequest{table: batches[n%distinct]},
					ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
				})
				if err != nil {
					return err
				}
				if len(out.UnprocessedItems) > 0 {
					return fmt.Errorf("the ceiling endpoint must not throttle")
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return &ceilingResult{Items: int64(total * sink.MaxBatchItems), Seconds: time.Since(start).Seconds()}, nil
}

// sampleItem has the shape of the portfolio mapping's database item.
func sampleItem(i int) map[string]types.AttributeValue {
	p := strconv.Itoa(i/itemsPerPortfolio + 1)
	srv := "Srv" + p + "n" + strconv.Itoa(i%3+1)
	db := "Db" + p + "n" + strconv.Itoa(i%3+1) + "d" + strconv.Itoa(i) // unique per item
	return map[string]types.AttributeValue{
		"PK":          &types.AttributeValueMemberS{Value: p},
		"SK":          &types.AttributeValueMemberS{Value: "DATABASE#" + db},
		"GSI1PK":      &types.AttributeValueMemberS{Value: p + "#" + srv},
		"PortfolioID": &types.AttributeValueMemberN{Value: p},
		"ServerID":    &types.AttributeValueMemberS{Value: srv},
		"DatabaseID":  &types.AttributeValueMemberS{Value: db},
		"_type":       &types.AttributeValueMemberS{Value: "database"},
	}
}
