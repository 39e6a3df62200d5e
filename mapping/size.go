package mapping

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize computes an item's size as DynamoDB counts it against the 400 KB
// limit and for write units: the UTF-8 length of every attribute name plus
// the size of its value.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + ValueSize(v)
	}
	return n
}

// ValueSize is the stored size of one attribute value:
//   - S: UTF-8 bytes; B: raw bytes
//   - N: see numberSize, an upper bound of DynamoDB's approximate rule
//   - BOOL, NULL: one byte
//   - L, M: three bytes, plus one byte and the size of each element (and
//     for M the element's name)
//   - sets: the sum of their elements
func ValueSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return numberSize(x.Value)
	case *types.AttributeValueMemberB:
		return len(x.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + ValueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + ValueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range x.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range x.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range x.Value {
			n += len(b)
		}
		return n
	}
	return 0
}

// numberSize is the size counted for a number: 2 bytes plus one per two
// significant digits (rounded down), plus 1 for a negative number.
//
// DynamoDB documents only "approximately 1 byte per two significant digits,
// plus 1 byte". It stores numbers base 100: an exponent byte, then one byte
// per pair of digits, the pairs aligned on the decimal point, so 407.5 is
// 04|07|50, three bytes of digits where (4+1)/2 counted two. dynalite
// implements exactly that (db/index.js valSize: 1 + ceil(d/2), plus 1
// when d and the exponent are both even, plus 1 when negative). The
// alignment can cost at most one byte more than ceil(d/2), so
// 1 + ceil((d+1)/2) + negative = 2 + d/2 + negative bounds it for every
// exponent: it never counts less than the server, and at most one byte
// more per number. Zero counts 2 (the server: 1).
func numberSize(s string) int {
	if n, ok := integerSize(s); ok {
		return n
	}
	neg, digits, _, err := parseDecimal(s)
	if err != nil {
		// Not a valid number: DynamoDB refuses it anyway; never undercount.
		return len(s) + 2
	}
	n := 2 + len(digits)/2
	if neg && digits != "" {
		n++
	}
	return n
}

// integerSize is numberSize of an integer written as integer columns
// render it (-?[1-9][0-9]* or 0), without parseDecimal's general parse;
// false for any other form.
func integerSize(s string) (int, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	digits := len(s)
	for digits > 0 && s[digits-1] == '0' {
		digits-- // trailing zeros are the exponent's
	}
	n := 2 + digits/2
	if neg && digits > 0 {
		n++
	}
	return n, true
}

// nestingDepth returns how deeply lists and maps nest inside v.
func nestingDepth(v types.AttributeValue) int {
	best := 0
	switch x := v.(type) {
	case *types.AttributeValueMemberL:
		for _, e := range x.Value {
			best = max(best, nestingDepth(e))
		}
		return best + 1
	case *types.AttributeValueMemberM:
		for _, e := range x.Value {
			best = max(best, nestingDepth(e))
		}
		return best + 1
	}
	return 0
}
