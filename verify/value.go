package verify

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Value is an attribute value in a report. In JSON it is DynamoDB's own
// typed form, as the AWS CLI prints it ({"S": "x"}, {"N": "12.5"},
// {"SS": […]}, {"M": {…}}, binary as base64), so that a number is never
// confused with a string; set elements are sorted so that reports are
// stable.
type Value struct {
	AV types.AttributeValue
}

func valueOf(av types.AttributeValue) *Value { return &Value{AV: av} }

// MarshalJSON implements json.Marshaler.
func (v Value) MarshalJSON() ([]byte, error) {
	return json.Marshal(typed(v.AV))
}

// UnmarshalJSON implements json.Unmarshaler, for tools that read reports.
func (v *Value) UnmarshalJSON(data []byte) error {
	av, err := untyped(data)
	if err != nil {
		return err
	}
	v.AV = av
	return nil
}

// typed converts av to DynamoDB JSON as plain Go values.
func typed(av types.AttributeValue) map[string]any {
	switch x := av.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": x.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": x.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(x.Value)}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": x.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": sortedStrings(x.Value)}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": sortedNumbers(x.Value)}
	case *types.AttributeValueMemberBS:
		out := make([]string, len(x.Value))
		for i, b := range sortedBytes(x.Value) {
			out[i] = base64.StdEncoding.EncodeToString(b)
		}
		return map[string]any{"BS": out}
	case *types.AttributeValueMemberL:
		out := make([]any, len(x.Value))
		for i, e := range x.Value {
			out[i] = typed(e)
		}
		return map[string]any{"L": out}
	case *types.AttributeValueMemberM:
		out := make(map[string]any, len(x.Value))
		for k, e := range x.Value {
			out[k] = typed(e)
		}
		return map[string]any{"M": out}
	}
	return map[string]any{"NULL": true}
}

func untyped(data []byte) (types.AttributeValue, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("an attribute value has exactly one type key, not %d", len(m))
	}
	for t, raw := range m {
		switch t {
		case "S", "N":
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			if t == "S" {
				return &types.AttributeValueMemberS{Value: s}, nil
			}
			return &types.AttributeValueMemberN{Value: s}, nil
		case "B":
			var b []byte
			err := json.Unmarshal(raw, &b)
			return &types.AttributeValueMemberB{Value: b}, err
		case "BOOL":
			var b bool
			err := json.Unmarshal(raw, &b)
			return &types.AttributeValueMemberBOOL{Value: b}, err
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: true}, nil
		case "SS", "NS":
			var ss []string
			if err := json.Unmarshal(raw, &ss); err != nil {
				return nil, err
			}
			if t == "SS" {
				return &types.AttributeValueMemberSS{Value: ss}, nil
			}
			return &types.AttributeValueMemberNS{Value: ss}, nil
		case "BS":
			var bs [][]byte
			err := json.Unmarshal(raw, &bs)
			return &types.AttributeValueMemberBS{Value: bs}, err
		case "L":
			var raws []json.RawMessage
			if err := json.Unmarshal(raw, &raws); err != nil {
				return nil, err
			}
			out := make([]types.AttributeValue, len(raws))
			for i, r := range raws {
				e, err := untyped(r)
				if err != nil {
					return nil, err
				}
				out[i] = e
			}
			return &types.AttributeValueMemberL{Value: out}, nil
		case "M":
			var raws map[string]json.RawMessage
			if err := json.Unmarshal(raw, &raws); err != nil {
				return nil, err
			}
			out := make(map[string]types.AttributeValue, len(raws))
			for k, r := range raws {
				e, err := untyped(r)
				if err != nil {
					return nil, err
				}
				out[k] = e
			}
			return &types.AttributeValueMemberM{Value: out}, nil
		default:
			return nil, fmt.Errorf("unknown attribute value type %q", t)
		}
	}
	return nil, nil
}

func sortedStrings(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	return out
}

// sortedNumbers orders numbers by value, through their sortable encoding.
func sortedNumbers(ns []string) []string {
	out := append([]string(nil), ns...)
	sort.Slice(out, func(i, j int) bool {
		return bytes.Compare(numberSortKey(nil, out[i]), numberSortKey(nil, out[j])) < 0
	})
	return out
}

func sortedBytes(bs [][]byte) [][]byte {
	out := append([][]byte(nil), bs...)
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i], out[j]) < 0 })
	return out
}

// Text renders the value compactly for terminals and Markdown: strings
// quoted, numbers bare, binary as b64"…", sets as <<…>>, lists […] and maps
// {…} with sorted keys.
func (v Value) Text() string {
	var sb strings.Builder
	writeText(&sb, v.AV)
	return sb.String()
}

func writeText(sb *strings.Builder, av types.AttributeValue) {
	switch x := av.(type) {
	case *types.AttributeValueMemberS:
		sb.WriteString(quote(x.Value))
	case *types.AttributeValueMemberN:
		sb.WriteString(x.Value)
	case *types.AttributeValueMemberB:
		sb.WriteString(binaryLiteral(base64.StdEncoding.EncodeToString(x.Value)))
	case *types.AttributeValueMemberBOOL:
		fmt.Fprint(sb, x.Value)
	case *types.AttributeValueMemberNULL:
		sb.WriteString("null")
	case *types.AttributeValueMemberSS:
		sb.WriteString("<<")
		for i, s := range sortedStrings(x.Value) {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(quote(s))
		}
		sb.WriteString(">>")
	case *types.AttributeValueMemberNS:
		sb.WriteString("<<" + strings.Join(sortedNumbers(x.Value), ", ") + ">>")
	case *types.AttributeValueMemberBS:
		sb.WriteString("<<")
		for i, b := range sortedBytes(x.Value) {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(binaryLiteral(base64.StdEncoding.EncodeToString(b)))
		}
		sb.WriteString(">>")
	case *types.AttributeValueMemberL:
		sb.WriteByte('[')
		for i, e := range x.Value {
			if i > 0 {
				sb.WriteString(", ")
			}
			writeText(sb, e)
		}
		sb.WriteByte(']')
	case *types.AttributeValueMemberM:
		keys := make([]string, 0, len(x.Value))
		for k := range x.Value {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(quote(k) + ": ")
			writeText(sb, x.Value[k])
		}
		sb.WriteByte('}')
	default:
		sb.WriteString("?")
	}
}

// quote writes a string as JSON does, without escaping <, > and &.
func quote(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}

// binaryLiteral is binary in the report's text: its base64 (as
// mapping.KeyText and DynamoDB's JSON have it) marked b64"…", so that it
// is not read as a string.
func binaryLiteral(b64 string) string { return `b64"` + b64 + `"` }
