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
//   - N: one byte per two significant digits, plus one
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

// largestAttribute returns the attribute taking the most bytes, name
// included (the first by name on a tie), for error messages.
func largestAttribute(item map[string]types.AttributeValue) (string, int) {
	name, best := "", -1
	for k, v := range item {
		if n := len(k) + ValueSize(v); n > best || (n == best && k < name) {
			name, best = k, n
		}
	}
	return name, best
}

func numberSize(s string) int {
	return (NumberDigits(s)+1)/2 + 1
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
