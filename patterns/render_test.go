package patterns

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/golden"
	"github.com/dynafold/dynafold/mapping"
)

// fakeTable answers a Query with the items of its partition key value,
// one page, whatever the sort-key condition: enough to exercise the
// expectations.
type fakeTable map[string][]map[string]types.AttributeValue

func (f fakeTable) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	pk := in.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS).Value
	return &dynamodb.QueryOutput{Items: f[pk], ConsumedCapacity: &types.ConsumedCapacity{CapacityUnits: aws.Float64(0.5)}}, nil
}

func orderItems(customer string, n int) []map[string]types.AttributeValue {
	out := []map[string]types.AttributeValue{{
		"PK": &types.AttributeValueMemberS{Value: customer}, "SK": &types.AttributeValueMemberS{Value: customer}, "_type": &types.AttributeValueMemberS{Value: "customer"},
	}}
	for i := 1; i < n; i++ {
		out = append(out, map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: customer}, "SK": &types.AttributeValueMemberS{Value: fmt.Sprintf("ORDER#%05d", 10000+i)}, "_type": &types.AttributeValueMemberS{Value: "order"},
		})
	}
	return out
}

const shopPatterns = `
version: 1
source: {driver: postgres}
target:
  table: shop
  key: {pk: PK, sk: SK}
  type_attribute: _type
entities:
  customer:
    from: customers
    key: {pk: "CUSTOMER#${id}", sk: "CUSTOMER#${id}"}
access_patterns:
  - name: at least 3, and 9 came
    query: {pk: "CUSTOMER#ALFKI"}
    expect: {min_count: 3}
  - name: at least 3, and 2 came
    query: {pk: "CUSTOMER#ANATR"}
    expect: {min_count: 3}
  - name: at most 10, and 9 came
    query: {pk: "CUSTOMER#ALFKI"}
    expect: {max_count: 10}
  - name: at most 5, and 9 came
    query: {pk: "CUSTOMER#ALFKI"}
    expect: {max_count: 5}
  - name: exactly 9, between 1 and 20, of two types
    query: {pk: "CUSTOMER#ALFKI"}
    expect: {count: 9, min_count: 1, max_count: 20, types: [customer, order]}
  - name: exactly 8, and 9 came, of the wrong types
    query: {pk: "CUSTOMER#ALFKI"}
    expect: {count: 8, types: [order]}
`

// A count prints with its bound where the bound belongs: "count 9 ≥ 3"
// when it holds, "count 2, want ≥ 3" when it does not, and the same forms
// for max_count (≤) and count (=), in text and in Markdown.
func TestCountChecksRender(t *testing.T) {
	cfg, err := mapping.Parse([]byte(shopPatterns))
	require.NoError(t, err)
	p, err := mapping.Compile(cfg, nil, mapping.Options{})
	require.NoError(t, err)
	table := fakeTable{"CUSTOMER#ALFKI": orderItems("CUSTOMER#ALFKI", 9), "CUSTOMER#ANATR": orderItems("CUSTOMER#ANATR", 2)}
	rep, err := Run(context.Background(), table, p, Options{})
	require.NoError(t, err)
	require.Equal(t, 3, rep.Passed)
	require.Equal(t, 3, rep.Failed)

	for _, tc := range []struct {
		pattern int
		want    []Check
	}{
		{0, []Check{{What: "count", Op: ">=", Want: "3", Got: "9", OK: true}}},
		{1, []Check{{What: "count", Op: ">=", Want: "3", Got: "2"}}},
		{2, []Check{{What: "count", Op: "<=", Want: "10", Got: "9", OK: true}}},
		{3, []Check{{What: "count", Op: "<=", Want: "5", Got: "9"}}},
		{5, []Check{{What: "count", Op: "=", Want: "8", Got: "9"}, {What: "types returned", Want: "order", Got: "customer, order"}}},
	} {
		t.Run(rep.Patterns[tc.pattern].Name, func(t *testing.T) {
			require.Equal(t, tc.want, rep.Patterns[tc.pattern].Checks)
		})
	}

	var text, md bytes.Buffer
	rep.WriteText(&text, false)
	rep.WriteMarkdown(&md)
	golden.Check(t, "counts.txt", text.String())
	golden.Check(t, "counts.md", md.String())
}

// Count expectations that cannot all hold, or a negative count, are
// mapping errors naming the key.
func TestCountExpectationsValidate(t *testing.T) {
	for _, tc := range []struct{ expect, want string }{
		{"{min_count: 5, max_count: 3}", "access_patterns[0].expect: min_count 5 is more than max_count 3: no count meets both"},
		{"{max_count: -1}", "access_patterns[0].expect.max_count: a count cannot be negative, not -1"},
		{"{count: -2}", "access_patterns[0].expect.count: a count cannot be negative, not -2"},
	} {
		t.Run(tc.expect, func(t *testing.T) {
			cfg, err := mapping.Parse([]byte(`
version: 1
source: {driver: postgres}
target: {table: shop, key: {pk: PK}}
entities:
  customer: {from: customers, key: {pk: "C#${id}"}}
access_patterns:
  - {name: x, query: {pk: "C#1"}, expect: ` + tc.expect + `}
`))
			require.NoError(t, err)
			require.EqualError(t, mapping.Validate(cfg, mapping.Options{}), tc.want)
		})
	}
}
