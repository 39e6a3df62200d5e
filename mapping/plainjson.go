package mapping

import (
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// PlainJSON renders an attribute value as ordinary JSON: numbers exact (as
// JSON numbers), binary as base64, sets as arrays, maps with sorted keys
// (encoding/json sorts them). It is for people and tests reading items,
// not for writing them back.
func PlainJSON(av types.AttributeValue) any {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return json.Number(v.Value)
	case *types.AttributeValueMemberB:
		return v.Value
	case *types.AttributeValueMemberBOOL:
		return v.Value
	case *types.AttributeValueMemberNULL:
		return nil
	case *types.AttributeValueMemberSS:
		return v.Value
	case *types.AttributeValueMemberNS:
		out := make([]json.Number, len(v.Value))
		for i, n := range v.Value {
			out[i] = json.Number(n)
		}
		return out
	case *types.AttributeValueMemberBS:
		return v.Value
	case *types.AttributeValueMemberL:
		out := make([]any, len(v.Value))
		for i, e := range v.Value {
			out[i] = PlainJSON(e)
		}
		return out
	case *types.AttributeValueMemberM:
		return plainMap(v.Value)
	}
	return nil
}

func plainMap(m map[string]types.AttributeValue) map[string]any {
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = PlainJSON(e)
	}
	return out
}

// ItemJSON renders a whole item as one line of JSON with sorted keys.
func ItemJSON(item map[string]types.AttributeValue) (string, error) {
	b, err := json.Marshal(plainMap(item))
	return string(b), err
}
