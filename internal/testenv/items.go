package testenv

import (
	"context"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
)

// ScanItems reads the whole table and returns every item as a JSON line
// (attribute values unmarshalled to plain JSON, keys sorted), the lines
// sorted, so tests can compare tables exactly.
func ScanItems(t testing.TB, c *dynamodb.Client, table string) []string {
	t.Helper()
	var lines []string
	var start map[string]types.AttributeValue
	for {
		out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start})
		if err != nil {
			t.Fatalf("scanning %s: %v", table, err)
		}
		for _, it := range out.Items {
			lines = append(lines, ItemJSON(t, it))
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	sort.Strings(lines)
	return lines
}

// ItemJSON renders one item as JSON with sorted keys; numbers stay exact
// (as JSON numbers), binary is base64, sets are arrays.
func ItemJSON(t testing.TB, item map[string]types.AttributeValue) string {
	t.Helper()
	line, err := mapping.ItemJSON(item)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// Query runs a key-condition query and returns the items in order.
func Query(t testing.TB, c *dynamodb.Client, in *dynamodb.QueryInput) []map[string]types.AttributeValue {
	t.Helper()
	var items []map[string]types.AttributeValue
	for {
		out, err := c.Query(context.Background(), in)
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return items
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
