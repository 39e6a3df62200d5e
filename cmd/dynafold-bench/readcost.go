package main

import (
	"context"
	"fmt"
	"math"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
)

// readUnitBytes: a strongly consistent read unit covers 4 KB; Scan and
// Query are billed on the summed size of the items a page reads, rounded
// up to it, and an eventually consistent read costs half.
const readUnitBytes = 4096

func readCostCommand() *cobra.Command {
	var endpoint, table string
	var segments int
	cmd := &cobra.Command{
		Use:   "readcost",
		Short: "Bill a table's two stale sweeps from its item sizes: one Scan of every item, or one Query per collection",
		Long: `Reads every item of the table, whole, in a parallel Scan of --segments
segments, and prints what DynamoDB bills, from the items' sizes
(mapping.ItemSize), for the two sweeps of verify, diff and migrate --prune:

  table        a Scan of every item: per page, the summed item sizes
               rounded up to 4 KB (the projection does not change it)
  collections  a Query of every collection: per collection, its summed
               item sizes rounded up to 4 KB (a collection over 1 MB
               takes one more rounding per page, not counted here)

both at the consistent rate the sweeps read at, and what the endpoint
itself reported for this Scan (dynalite ignores ConsistentRead on Scan,
and so reports half). It holds one counter per collection.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return readCost(cmd.Context(), endpoint, table, segments)
		},
	}
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "DynamoDB endpoint")
	cmd.Flags().StringVar(&table, "table", "", "table")
	cmd.Flags().IntVar(&segments, "segments", 4, "Scan segments, as dynafold's --concurrency")
	return cmd
}

func readCost(ctx context.Context, endpoint, table string, segments int) error {
	client, err := sink.NewClient(ctx, sink.ClientOptions{Endpoint: endpoint})
	if err != nil {
		return err
	}
	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("describing table %s: %w", table, err)
	}
	var pkName string
	for _, k := range desc.Table.KeySchema {
		if k.KeyType == types.KeyTypeHash {
			pkName = aws.ToString(k.AttributeName)
		}
	}
	var items, bytes, pages int64
	var scanUnits, reported float64
	collections := map[string]int64{}
	for seg := range segments {
		in := &dynamodb.ScanInput{
			TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Segment: aws.Int32(int32(seg)), TotalSegments: aws.Int32(int32(segments)),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		}
		for {
			out, err := client.Scan(ctx, in)
			if err != nil {
				return fmt.Errorf("scanning table %s (segment %d of %d): %w", table, seg, segments, err)
			}
			var page int64
			for _, it := range out.Items {
				size := int64(mapping.ItemSize(it))
				page += size
				pk, _ := mapping.KeyIdentity(it[pkName])
				collections[pk] += size
			}
			items += int64(len(out.Items))
			bytes += page
			pages++
			scanUnits += math.Ceil(float64(page) / readUnitBytes)
			if cc := out.ConsumedCapacity; cc != nil && cc.CapacityUnits != nil {
				reported += *cc.CapacityUnits
			}
			if len(out.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	var queryUnits float64
	for _, size := range collections {
		queryUnits += math.Ceil(float64(size) / readUnitBytes)
	}
	fmt.Printf("table %s: %d items, %d bytes (%.1f a item), %d collections\n", table, items, bytes, float64(bytes)/float64(max(items, 1)), len(collections))
	fmt.Printf("sweep table:       %.0f read units consistent (%.1f eventually consistent), %d Scan pages in %d segments; the endpoint reported %g\n",
		scanUnits, scanUnits/2, pages, segments, reported)
	fmt.Printf("sweep collections: %.0f read units consistent (%.1f eventually consistent), %d Queries\n", queryUnits, queryUnits/2, len(collections))
	return nil
}
