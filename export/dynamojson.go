package export

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// AppendItemLine appends one line of ImportTable's DYNAMODB_JSON input
// format, {"Item":{...}} and a newline, to buf. Attribute names are
// sorted so that the same item always encodes to the same bytes.
//
// This is the only place export turns an item into DynamoDB JSON, kept
// small on purpose: a faster encoder elsewhere can replace it whole.
func AppendItemLine(buf []byte, attrs map[string]types.AttributeValue) ([]byte, error) {
	buf = append(buf, `{"Item":`...)
	buf, err := appendMap(buf, attrs)
	if err != nil {
		return buf, err
	}
	return append(buf, "}\n"...), nil
}

func appendMap(buf []byte, m map[string]types.AttributeValue) ([]byte, error) {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	buf = append(buf, '{')
	for i, k := range names {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, k)
		buf = append(buf, ':')
		var err error
		if buf, err = appendValue(buf, m[k]); err != nil {
			return buf, fmt.Errorf("attribute %s: %w", k, err)
		}
	}
	return append(buf, '}'), nil
}

func appendValue(buf []byte, av types.AttributeValue) ([]byte, error) {
	var err error
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		buf = append(buf, `{"S":`...)
		buf = appendString(buf, v.Value)
	case *types.AttributeValueMemberN:
		buf = append(buf, `{"N":`...)
		buf = appendString(buf, v.Value)
	case *types.AttributeValueMemberB:
		buf = append(buf, `{"B":"`...)
		buf = base64.StdEncoding.AppendEncode(buf, v.Value)
		buf = append(buf, '"')
	case *types.AttributeValueMemberBOOL:
		buf = append(buf, `{"BOOL":`...)
		buf = fmt.Appendf(buf, "%t", v.Value)
	case *types.AttributeValueMemberNULL:
		buf = append(buf, `{"NULL":true`...)
	case *types.AttributeValueMemberSS:
		buf = append(buf, `{"SS":[`...)
		for i, s := range v.Value {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, s)
		}
		buf = append(buf, ']')
	case *types.AttributeValueMemberNS:
		buf = append(buf, `{"NS":[`...)
		for i, s := range v.Value {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, s)
		}
		buf = append(buf, ']')
	case *types.AttributeValueMemberBS:
		buf = append(buf, `{"BS":[`...)
		for i, b := range v.Value {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '"')
			buf = base64.StdEncoding.AppendEncode(buf, b)
			buf = append(buf, '"')
		}
		buf = append(buf, ']')
	case *types.AttributeValueMemberM:
		buf = append(buf, `{"M":`...)
		if buf, err = appendMap(buf, v.Value); err != nil {
			return buf, err
		}
	case *types.AttributeValueMemberL:
		buf = append(buf, `{"L":[`...)
		for i, e := range v.Value {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, err = appendValue(buf, e); err != nil {
				return buf, err
			}
		}
		buf = append(buf, ']')
	default:
		return buf, fmt.Errorf("unsupported attribute value %T", av)
	}
	return append(buf, '}'), nil
}

// appendString appends s as a JSON string. encoding/json escapes it (and
// replaces invalid UTF-8, which the mapping never produces).
func appendString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(buf, b...)
}
