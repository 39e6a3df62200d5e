package main

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/mapping"
)

func (a *app) dumpCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dump",
		Short: "Print the table's items as JSON lines (a Scan; for small tables and demos)",
		Long: `Scans the target table and prints each item as one line of plain JSON
(numbers exact, binary as base64), sorted by partition and sort key. It reads
the whole table: use it on small tables, demos and tests, not in production.`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{outputsAnnotation: "text,json"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep := a.newReport("dump")
			n, err := a.dump(cmd)
			rep.Result = map[string]int{"items": n}
			return a.finishReport(rep, err)
		},
	}
	cmd.Flags().Int("limit", 0, "print at most N items (0: all)")
	return cmd
}

// dump prints the table's items and returns how many it printed.
func (a *app) dump(cmd *cobra.Command) (int, error) {
	l, err := a.load()
	if err != nil {
		return 0, err
	}
	client, err := a.dynamo(cmd.Context(), l, 2)
	if err != nil {
		return 0, err
	}
	limit := a.v.GetInt("limit")
	var items []map[string]types.AttributeValue
	in := &dynamodb.ScanInput{TableName: aws.String(l.static.Table.Name)}
	for {
		out, err := client.Scan(cmd.Context(), in)
		var missing *types.ResourceNotFoundException
		if errors.As(err, &missing) {
			return 0, a.missingTable(l.static.Table.Name, l) // as migrate says it
		}
		if err != nil {
			return 0, fmt.Errorf("scanning %s: %w", l.static.Table.Name, err)
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 || (limit > 0 && len(items) >= limit) {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	t := l.static.Table
	sort.SliceStable(items, func(i, j int) bool {
		if c := compareKeys(items[i][t.PK.Name], items[j][t.PK.Name]); c != 0 || t.SK == nil {
			return c < 0
		}
		return compareKeys(items[i][t.SK.Name], items[j][t.SK.Name]) < 0
	})
	if limit > 0 && len(items) > limit {
		items = items[:limit]
	}
	for _, it := range items {
		line, err := mapping.ItemJSON(it)
		if err != nil {
			return 0, err
		}
		fmt.Fprintln(a.data, line) // data: not redacted
	}
	return len(items), nil
}

// compareKeys orders key values for display: strings and numbers by
// their text, binary by its bytes (as DynamoDB orders it; its base64 text
// would not).
func compareKeys(a, b types.AttributeValue) int {
	ab, aok := a.(*types.AttributeValueMemberB)
	bb, bok := b.(*types.AttributeValueMemberB)
	if aok && bok {
		return bytes.Compare(ab.Value, bb.Value)
	}
	return strings.Compare(mapping.KeyText(a), mapping.KeyText(b))
}
