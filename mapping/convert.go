package mapping

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/value"
)

// AttrType is a DynamoDB attribute type as written in the mapping's
// `type:`. The empty type means "the natural type of the column".
type AttrType string

// The DynamoDB attribute types a mapping can ask for.
const (
	TypeAuto AttrType = ""
	TypeS    AttrType = "S"
	TypeN    AttrType = "N"
	TypeB    AttrType = "B"
	TypeBOOL AttrType = "BOOL"
	TypeM    AttrType = "M"
	TypeL    AttrType = "L"
	TypeSS   AttrType = "SS"
	TypeNS   AttrType = "NS"
	TypeBS   AttrType = "BS"
)

func parseAttrType(s string) (AttrType, bool) {
	switch t := AttrType(strings.ToUpper(s)); t {
	case TypeAuto, TypeS, TypeN, TypeB, TypeBOOL, TypeM, TypeL, TypeSS, TypeNS, TypeBS:
		return t, true
	}
	return "", false
}

// naturalType is the DynamoDB type a source kind becomes by default.
func naturalType(k value.Kind) AttrType {
	switch k {
	case value.Int, value.Decimal, value.Float:
		return TypeN
	case value.Bool:
		return TypeBOOL
	case value.Bytes:
		return TypeB
	case value.JSON:
		return TypeM // or L, decided by the document
	case value.List:
		return TypeL
	}
	return TypeS
}

// errOmit means the value becomes no attribute (an empty set, which
// DynamoDB cannot store).
var errOmit = errors.New("omit")

// Convert turns one non-NULL source value into a DynamoDB attribute value of
// type t (TypeAuto: the column's natural type).
func Convert(v value.Value, t AttrType) (types.AttributeValue, error) {
	if t == TypeAuto {
		t = naturalType(v.Kind)
		if v.Kind == value.JSON {
			return jsonAttr(v.S)
		}
	}
	switch t {
	case TypeS:
		return toS(v)
	case TypeN:
		n, err := toNumber(v)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberN{Value: n}, nil
	case TypeBOOL:
		return toBool(v)
	case TypeB:
		switch v.Kind {
		case value.Bytes:
			return &types.AttributeValueMemberB{Value: v.Bytes()}, nil
		case value.String:
			return &types.AttributeValueMemberB{Value: []byte(v.S)}, nil
		}
		return nil, fmt.Errorf("cannot store a %s value as B", v.Kind)
	case TypeM, TypeL:
		var av types.AttributeValue
		var err error
		switch v.Kind {
		case value.JSON, value.String:
			av, err = jsonAttr(v.S)
		case value.List:
			av, err = listAttr(v.List())
		default:
			return nil, fmt.Errorf("cannot store a %s value as %s", v.Kind, t)
		}
		if err != nil {
			return nil, err
		}
		if _, isM := av.(*types.AttributeValueMemberM); t == TypeM && !isM {
			return nil, fmt.Errorf("JSON value is not an object, cannot store it as M")
		}
		if _, isL := av.(*types.AttributeValueMemberL); t == TypeL && !isL {
			return nil, fmt.Errorf("value is not a list, cannot store it as L")
		}
		return av, nil
	case TypeSS, TypeNS, TypeBS:
		return toSet(v, t)
	}
	return nil, fmt.Errorf("unknown attribute type %q", t)
}

func toS(v value.Value) (types.AttributeValue, error) {
	var s string
	switch v.Kind {
	case value.Bytes:
		// type: S on a binary column says the bytes are text (a BLOB
		// holding UTF-8, say); bytes that are not UTF-8 are an error, never
		// silently mangled.
		if !utf8.Valid(v.Bytes()) {
			return nil, fmt.Errorf("binary value %s is not valid UTF-8 text; store it as type B", quoteValue(string(v.Bytes())))
		}
		s = string(v.Bytes())
	case value.List:
		return nil, fmt.Errorf("cannot store a list as S; use type L or a set type")
	default:
		s = v.Text()
	}
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("invalid UTF-8 in string value %s", quoteValue(s))
	}
	return &types.AttributeValueMemberS{Value: s}, nil
}

func toNumber(v value.Value) (string, error) {
	switch v.Kind {
	case value.Int:
		return strconv.FormatInt(v.I, 10), nil
	case value.Bool:
		return strconv.FormatInt(v.I, 10), nil
	case value.Float:
		if math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0) {
			return "", fmt.Errorf("%v cannot be stored as a DynamoDB number", v.Float())
		}
		return NormalizeNumber(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case value.Decimal, value.String:
		s := strings.TrimSpace(v.S)
		switch strings.ToLower(s) {
		case "nan", "infinity", "-infinity", "+infinity", "inf", "-inf":
			return "", fmt.Errorf("%s cannot be stored as a DynamoDB number", s)
		}
		n, err := NormalizeNumber(s)
		if errors.Is(err, errNotNumber) {
			return "", fmt.Errorf("%s is not a number", quoteValue(v.S))
		}
		return n, err
	case value.Date, value.Timestamp:
		// A date or timestamp stored as a Number is epoch seconds, the
		// form DynamoDB's TTL expects.
		return strconv.FormatInt(v.Time().Unix(), 10), nil
	}
	return "", fmt.Errorf("cannot store a %s value as N", v.Kind)
}

func toBool(v value.Value) (types.AttributeValue, error) {
	switch v.Kind {
	case value.Bool, value.Int:
		return &types.AttributeValueMemberBOOL{Value: v.I != 0}, nil
	case value.String:
		switch strings.ToLower(strings.TrimSpace(v.S)) {
		case "true", "t", "yes", "y", "1", "on":
			return &types.AttributeValueMemberBOOL{Value: true}, nil
		case "false", "f", "no", "n", "0", "off":
			return &types.AttributeValueMemberBOOL{Value: false}, nil
		}
		return nil, fmt.Errorf("%s is not a boolean", quoteValue(v.S))
	}
	return nil, fmt.Errorf("cannot store a %s value as BOOL", v.Kind)
}

func listAttr(l []value.Value) (types.AttributeValue, error) {
	out := make([]types.AttributeValue, len(l))
	for i, e := range l {
		if e.IsNull() {
			out[i] = &types.AttributeValueMemberNULL{Value: true}
			continue
		}
		av, err := Convert(e, TypeAuto)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out[i] = av
	}
	return &types.AttributeValueMemberL{Value: out}, nil
}

func toSet(v value.Value, t AttrType) (types.AttributeValue, error) {
	var elems []value.Value
	switch v.Kind {
	case value.List:
		elems = v.List()
	case value.JSON:
		if !utf8.ValidString(v.S) {
			return nil, errJSONUTF8
		}
		var raw []json.RawMessage
		if err := json.Unmarshal([]byte(v.S), &raw); err != nil {
			return nil, fmt.Errorf("cannot store JSON that is not an array as %s", t)
		}
		for _, r := range raw {
			var s any
			d := json.NewDecoder(bytes.NewReader(r))
			d.UseNumber()
			if err := d.Decode(&s); err != nil {
				return nil, err
			}
			switch x := s.(type) {
			case string:
				elems = append(elems, value.StringValue(x))
			case json.Number:
				elems = append(elems, value.DecimalValue(x.String()))
			default:
				return nil, fmt.Errorf("a %s element must be a string or number, not %s", t, r)
			}
		}
	default:
		return nil, fmt.Errorf("cannot store a %s value as %s", v.Kind, t)
	}
	if len(elems) == 0 {
		return nil, errOmit
	}
	seen := make(map[string]bool, len(elems))
	var ss []string
	var bs [][]byte
	for i, e := range elems {
		if e.IsNull() {
			return nil, fmt.Errorf("element %d of a %s is NULL", i, t)
		}
		var k string
		switch t {
		case TypeSS:
			av, err := toS(e)
			if err != nil {
				return nil, err
			}
			k = av.(*types.AttributeValueMemberS).Value
			ss = append(ss, k)
		case TypeNS:
			n, err := toNumber(e)
			if err != nil {
				return nil, err
			}
			k = n
			ss = append(ss, n)
		case TypeBS:
			if e.Kind != value.Bytes {
				return nil, fmt.Errorf("element %d of a BS is %s, not bytes", i, e.Kind)
			}
			k = string(e.Bytes())
			bs = append(bs, e.Bytes())
		}
		if seen[k] {
			return nil, fmt.Errorf("a %s cannot hold duplicates, and %s appears twice", t, quoteValue(k))
		}
		seen[k] = true
	}
	switch t {
	case TypeSS:
		return &types.AttributeValueMemberSS{Value: ss}, nil
	case TypeNS:
		return &types.AttributeValueMemberNS{Value: ss}, nil
	}
	return &types.AttributeValueMemberBS{Value: bs}, nil
}

// errJSONUTF8 rejects JSON text that is not UTF-8 before encoding/json
// sees it: the decoder would replace the bad bytes with U+FFFD silently.
var errJSONUTF8 = errors.New("invalid UTF-8 in JSON text")

// jsonAttr converts a JSON document: objects to M, arrays to L, numbers to
// exact N, strings to S, booleans to BOOL and null to NULL.
func jsonAttr(doc string) (types.AttributeValue, error) {
	if !utf8.ValidString(doc) {
		return nil, errJSONUTF8
	}
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("invalid JSON: trailing data after the document")
	}
	return jsonValue(x)
}

func jsonValue(x any) (types.AttributeValue, error) {
	switch v := x.(type) {
	case nil:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case bool:
		return &types.AttributeValueMemberBOOL{Value: v}, nil
	case string:
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("invalid UTF-8 in JSON string")
		}
		return &types.AttributeValueMemberS{Value: v}, nil
	case json.Number:
		n, err := NormalizeNumber(v.String())
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberN{Value: n}, nil
	case []any:
		out := make([]types.AttributeValue, len(v))
		for i, e := range v {
			av, err := jsonValue(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = av
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case map[string]any:
		out := make(map[string]types.AttributeValue, len(v))
		for k, e := range v {
			av, err := jsonValue(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", boundValue(k), err)
			}
			out[k] = av
		}
		return &types.AttributeValueMemberM{Value: out}, nil
	}
	return nil, fmt.Errorf("unexpected JSON value %T", x)
}
