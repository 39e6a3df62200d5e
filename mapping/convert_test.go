package mapping

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/golden"
	"github.com/dynafold/dynafold/value"
)

// avJSON renders an attribute value in DynamoDB's JSON notation, for
// golden files and messages.
func avJSON(av types.AttributeValue) string {
	var enc func(types.AttributeValue) any
	enc = func(av types.AttributeValue) any {
		switch v := av.(type) {
		case *types.AttributeValueMemberS:
			return map[string]any{"S": v.Value}
		case *types.AttributeValueMemberN:
			return map[string]any{"N": v.Value}
		case *types.AttributeValueMemberB:
			return map[string]any{"B": v.Value}
		case *types.AttributeValueMemberBOOL:
			return map[string]any{"BOOL": v.Value}
		case *types.AttributeValueMemberNULL:
			return map[string]any{"NULL": true}
		case *types.AttributeValueMemberSS:
			return map[string]any{"SS": v.Value}
		case *types.AttributeValueMemberNS:
			return map[string]any{"NS": v.Value}
		case *types.AttributeValueMemberBS:
			return map[string]any{"BS": v.Value}
		case *types.AttributeValueMemberL:
			l := make([]any, len(v.Value))
			for i, e := range v.Value {
				l[i] = enc(e)
			}
			return map[string]any{"L": l}
		case *types.AttributeValueMemberM:
			m := map[string]any{}
			for k, e := range v.Value {
				m[k] = enc(e)
			}
			return map[string]any{"M": m}
		}
		return nil
	}
	b, _ := json.Marshal(enc(av))
	return string(b)
}

// TestConvertGolden covers every source kind with its default type and
// the explicit overrides a mapping can ask for.
func TestConvertGolden(t *testing.T) {
	ts := time.Date(2024, 3, 5, 23, 59, 59, 999000000, time.FixedZone("PST", -8*3600))
	cases := []struct {
		name string
		v    value.Value
		typ  AttrType
	}{
		{"int", value.IntValue(-9223372036854775808), TypeAuto},
		{"decimal 38 digits", value.DecimalValue("12345678901234567890123456789012345.678"), TypeAuto},
		{"decimal 39 digits", value.DecimalValue("123456789012345678901234567890123456.789"), TypeAuto},
		{"decimal trailing zeros", value.DecimalValue("100.500"), TypeAuto},
		{"decimal NaN", value.DecimalValue("NaN"), TypeAuto},
		{"unsigned bigint", value.DecimalValue("18446744073709551615"), TypeAuto},
		{"float", value.FloatValue(0.1), TypeAuto},
		{"float large", value.FloatValue(1.5e300), TypeAuto},
		{"float NaN", value.FloatValue(math.NaN()), TypeAuto},
		{"float +Inf", value.FloatValue(math.Inf(1)), TypeAuto},
		{"bool", value.BoolValue(true), TypeAuto},
		{"string", value.StringValue("Jeff's Plumbing"), TypeAuto},
		{"string unicode", value.StringValue("Zoë 東京 🚲"), TypeAuto},
		{"string empty", value.StringValue(""), TypeAuto},
		{"string invalid utf-8", value.StringValue("bad\xff"), TypeAuto},
		{"bytes", value.BytesValue([]byte{0, 1, 0xfe}), TypeAuto},
		{"date", value.DateValue(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)), TypeAuto},
		{"timestamp with zone", value.TimestampValue(ts), TypeAuto},
		{"json object", value.JSONValue(`{"a": 1.50, "b": [true, null, "x"], "c": {"d": 12345678901234567890123}}`), TypeAuto},
		{"json array", value.JSONValue(`[1, 2, 3]`), TypeAuto},
		{"json invalid", value.JSONValue(`{"a":`), TypeAuto},
		{"list", value.ListValue([]value.Value{value.IntValue(1), value.NullValue(), value.StringValue("x")}), TypeAuto},
		{"int as S", value.IntValue(42), TypeS},
		{"decimal as S", value.DecimalValue("1.50"), TypeS},
		{"string as N", value.StringValue(" 42.0 "), TypeN},
		{"string not a number as N", value.StringValue("forty-two"), TypeN},
		{"timestamp as N", value.TimestampValue(ts), TypeN},
		{"tinyint as BOOL", value.IntValue(1), TypeBOOL},
		{"string as BOOL", value.StringValue("yes"), TypeBOOL},
		{"string as B", value.StringValue("hi"), TypeB},
		{"json text as M", value.StringValue(`{"k":"v"}`), TypeM},
		{"json array as M", value.JSONValue(`[1]`), TypeM},
		{"list as SS", value.ListValue([]value.Value{value.StringValue("a"), value.StringValue("b")}), TypeSS},
		{"list with duplicates as SS", value.ListValue([]value.Value{value.StringValue("a"), value.StringValue("a")}), TypeSS},
		{"list as NS", value.ListValue([]value.Value{value.IntValue(3), value.DecimalValue("1.50")}), TypeNS},
		{"empty list as SS", value.ListValue(nil), TypeSS},
		{"json array as NS", value.JSONValue(`[1, 2.5]`), TypeNS},
		{"bytes as S", value.BytesValue([]byte("hi")), TypeS},
		{"invalid utf-8 bytes as S", value.BytesValue([]byte{'o', 0xff}), TypeS},
	}
	var sb strings.Builder
	for _, c := range cases {
		av, err := Convert(c.v, c.typ)
		typ := string(c.typ)
		if typ == "" {
			typ = "auto"
		}
		switch {
		case err == errOmit:
			fmt.Fprintf(&sb, "%-28s %-4s => omitted\n", c.name, typ)
		case err != nil:
			fmt.Fprintf(&sb, "%-28s %-4s => error: %v\n", c.name, typ, err)
		default:
			fmt.Fprintf(&sb, "%-28s %-4s => %s\n", c.name, typ, avJSON(av))
		}
	}
	golden.Check(t, "convert.golden", sb.String())
}

func TestItemSize(t *testing.T) {
	item := map[string]types.AttributeValue{
		"PK":   &types.AttributeValueMemberS{Value: "USER#1"},        // 2 + 6
		"Näme": &types.AttributeValueMemberS{Value: "Zoë"},           // 5 + 4
		"N":    &types.AttributeValueMemberN{Value: "123.45"},        // 1 + (5+1)/2+1 = 4
		"B":    &types.AttributeValueMemberB{Value: []byte{1, 2, 3}}, // 1 + 3
		"Ok":   &types.AttributeValueMemberBOOL{Value: true},         // 2 + 1
		"Nil":  &types.AttributeValueMemberNULL{Value: true},         // 3 + 1
		"L": &types.AttributeValueMemberL{Value: []types.AttributeValue{ // 1 + 3 + (1+1) + (1+2)
			&types.AttributeValueMemberS{Value: "a"},
			&types.AttributeValueMemberN{Value: "10"},
		}},
		"M": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{ // 1 + 3 + (1+1+2)
			"k": &types.AttributeValueMemberS{Value: "vv"},
		}},
		"SS": &types.AttributeValueMemberSS{Value: []string{"ab", "c"}}, // 2 + 3
	}
	want := (2 + 6) + (5 + 4) + (1 + 4) + (1 + 3) + (2 + 1) + (3 + 1) + (1 + 3 + 2 + 3) + (1 + 3 + 4) + (2 + 3)
	require.Equal(t, want, ItemSize(item))
	require.Equal(t, 1, WriteUnits(1))
	require.Equal(t, 1, WriteUnits(1024))
	require.Equal(t, 2, WriteUnits(1025))
	require.Equal(t, 400, WriteUnits(MaxItemBytes))
}

// JSON text that is not UTF-8 (from a SQL_ASCII database, say) is an
// error, never silently repaired: encoding/json would turn the bad bytes
// into U+FFFD.
func TestJSONWithInvalidUTF8IsRefused(t *testing.T) {
	for _, typ := range []AttrType{TypeAuto, TypeM, TypeL, TypeSS} {
		_, err := Convert(value.JSONValue(`["caf`+"\xe9"+`"]`), typ)
		require.ErrorContains(t, err, "invalid UTF-8 in JSON text", "type %q", typ)
	}
	av, err := Convert(value.JSONValue(`["café"]`), TypeSS)
	require.NoError(t, err)
	require.Equal(t, []string{"café"}, av.(*types.AttributeValueMemberSS).Value)
}
