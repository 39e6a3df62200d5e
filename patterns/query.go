package patterns

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
)

// shardMarker in a pattern's pk is replaced by each shard number in turn
// when the pattern declares shards: N (write-sharded keys).
const shardMarker = "${shard}"

// buildQueries turns a pattern into its Query inputs (one per shard) and a
// description of the key condition. Attribute names always go through
// placeholders: key attributes may be reserved words.
func buildQueries(plan *mapping.Plan, q mapping.PatternQuery) ([]*dynamodb.QueryInput, string, error) {
	t := plan.Table
	pkAttr, skAttr := t.PK, t.SK
	if q.Index != "" {
		ix := t.Index(q.Index)
		if ix == nil {
			return nil, "", fmt.Errorf("index %q is not declared", q.Index)
		}
		pkAttr, skAttr = ix.PK, ix.SK
	}
	names := map[string]string{"#pk": pkAttr.Name}
	values := map[string]types.AttributeValue{}
	cond := "#pk = :pk"
	desc := fmt.Sprintf("%s = %q", pkAttr.Name, q.PK)
	hasSKCond := q.SKEquals != nil || q.SKBeginsWith != nil || q.SKLess != nil || q.SKLessEq != nil ||
		q.SKGreater != nil || q.SKGreaterEq != nil || q.SKBetween != nil
	if hasSKCond && skAttr == nil {
		where := "the table"
		if q.Index != "" {
			where = "index " + q.Index
		}
		return nil, "", fmt.Errorf("a sort-key condition, but %s has no sort key", where)
	}
	skCond, skDesc, err := sortCondition(q, skAttr, values)
	if err != nil {
		return nil, "", err
	}
	if skCond != "" {
		names["#sk"] = skAttr.Name
		cond += " AND " + skCond
		desc += " AND " + skDesc
	}
	if q.Index != "" {
		desc = "index " + q.Index + ": " + desc
	}
	if q.Descending {
		desc += ", descending"
	}
	if q.Limit > 0 {
		desc += fmt.Sprintf(", limit %d", q.Limit)
	}
	pks := []string{q.PK}
	if q.ShardRange > 0 {
		pks = pks[:0]
		for i := 0; i < q.ShardRange; i++ {
			pks = append(pks, strings.ReplaceAll(q.PK, shardMarker, strconv.Itoa(i)))
		}
		desc += fmt.Sprintf(", over shards 0..%d", q.ShardRange-1)
	}
	var out []*dynamodb.QueryInput
	for _, pk := range pks {
		vals := make(map[string]types.AttributeValue, len(values)+1)
		for k, v := range values {
			vals[k] = v
		}
		pkv, err := keyValue(pkAttr, pk)
		if err != nil {
			return nil, "", fmt.Errorf("pk: %w", err)
		}
		vals[":pk"] = pkv
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(t.Name),
			KeyConditionExpression:    aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: vals,
			ScanIndexForward:          aws.Bool(!q.Descending),
			ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
		}
		if q.Index != "" {
			in.IndexName = aws.String(q.Index)
		}
		out = append(out, in)
	}
	return out, desc, nil
}

// Describe is an access pattern's key condition in DynamoDB's notation,
// as the patterns report shows it (design html and workbench show it too).
func Describe(plan *mapping.Plan, q mapping.PatternQuery) (string, error) {
	_, desc, err := buildQueries(plan, q)
	return desc, err
}

// sortCondition renders the pattern's sort-key condition, if any; sk is
// nil only when there is none.
func sortCondition(q mapping.PatternQuery, sk *mapping.KeyAttr, values map[string]types.AttributeValue) (string, string, error) {
	if sk == nil {
		return "", "", nil
	}
	one := func(op string, v *string) (string, string, error) {
		av, err := keyValue(*sk, *v)
		if err != nil {
			return "", "", fmt.Errorf("sort key: %w", err)
		}
		values[":sk"] = av
		return "#sk " + op + " :sk", fmt.Sprintf("%s %s %q", sk.Name, op, *v), nil
	}
	switch {
	case q.SKEquals != nil:
		return one("=", q.SKEquals)
	case q.SKLess != nil:
		return one("<", q.SKLess)
	case q.SKLessEq != nil:
		return one("<=", q.SKLessEq)
	case q.SKGreater != nil:
		return one(">", q.SKGreater)
	case q.SKGreaterEq != nil:
		return one(">=", q.SKGreaterEq)
	case q.SKBeginsWith != nil:
		av, err := keyValue(*sk, *q.SKBeginsWith)
		if err != nil {
			return "", "", fmt.Errorf("sort key: %w", err)
		}
		values[":sk"] = av
		return "begins_with(#sk, :sk)", fmt.Sprintf("begins_with(%s, %q)", sk.Name, *q.SKBeginsWith), nil
	case q.SKBetween != nil:
		if len(q.SKBetween) != 2 {
			return "", "", fmt.Errorf("between takes two values")
		}
		lo, err := keyValue(*sk, q.SKBetween[0])
		if err != nil {
			return "", "", fmt.Errorf("sort key: %w", err)
		}
		hi, err := keyValue(*sk, q.SKBetween[1])
		if err != nil {
			return "", "", fmt.Errorf("sort key: %w", err)
		}
		values[":lo"], values[":hi"] = lo, hi
		return "#sk BETWEEN :lo AND :hi", fmt.Sprintf("%s BETWEEN %q AND %q", sk.Name, q.SKBetween[0], q.SKBetween[1]), nil
	}
	return "", "", nil
}

// keyValue types a key value written in the mapping as text.
func keyValue(k mapping.KeyAttr, v string) (types.AttributeValue, error) {
	switch k.Type {
	case mapping.TypeN:
		n, err := mapping.NormalizeNumber(v)
		if err != nil {
			return nil, fmt.Errorf("%s is a Number key: %w", k.Name, err)
		}
		return &types.AttributeValueMemberN{Value: n}, nil
	case mapping.TypeB:
		return &types.AttributeValueMemberB{Value: []byte(v)}, nil
	}
	return &types.AttributeValueMemberS{Value: v}, nil
}
