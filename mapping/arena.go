package mapping

import (
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/ddbjson"
)

// Arena hands out attribute values and strings from blocks, so that
// building an item costs a few allocations instead of one per attribute
// and per rendered string. Blocks are never reused: a block stays alive as
// long as any item built from it, and the garbage collector frees it after.
// Strings are made with unsafe.String over bytes that are never written
// again, so they are as immutable as any other string.
//
// An Arena is not safe for concurrent use; each builder goroutine has its
// own. The zero value is ready to use.
type Arena struct {
	s       []types.AttributeValueMemberS
	n       []types.AttributeValueMemberN
	b       []byte
	scratch []byte
	set     attrSet // an item's attributes until encoded
}

// Block sizes: big enough that allocation is rare, small enough that an
// item kept in flight pins little memory.
const (
	arenaValues = 256
	arenaBytes  = 16 << 10
)

// S returns a String attribute value.
func (a *Arena) S(v string) *types.AttributeValueMemberS {
	if a == nil {
		return &types.AttributeValueMemberS{Value: v}
	}
	if len(a.s) == 0 {
		a.s = make([]types.AttributeValueMemberS, arenaValues)
	}
	p := &a.s[0]
	a.s = a.s[1:]
	p.Value = v
	return p
}

// N returns a Number attribute value.
func (a *Arena) N(v string) *types.AttributeValueMemberN {
	if a == nil {
		return &types.AttributeValueMemberN{Value: v}
	}
	if len(a.n) == 0 {
		a.n = make([]types.AttributeValueMemberN, arenaValues)
	}
	p := &a.n[0]
	a.n = a.n[1:]
	p.Value = v
	return p
}

// String copies b into the arena and returns it as a string.
func (a *Arena) String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	s := a.bytes(b)
	return unsafe.String(&s[0], len(s))
}

// bytes copies b into the arena (a large b gets its own allocation) and
// returns the copy, capacity clipped so that nobody appends into the next.
func (a *Arena) bytes(b []byte) []byte {
	if a == nil || len(b) > arenaBytes/4 {
		return append([]byte(nil), b...)
	}
	if cap(a.b)-len(a.b) < len(b) {
		a.b = make([]byte, 0, arenaBytes)
	}
	start := len(a.b)
	a.b = append(a.b, b...)
	return a.b[start:len(a.b):len(a.b)]
}

// encode returns an item's DynamoDB JSON, encoded in the scratch buffer
// and copied into the arena.
func (a *Arena) encode(attrs map[string]types.AttributeValue) []byte {
	buf := ddbjson.AppendItem(a.buffer(), attrs)
	body := a.bytes(buf)
	a.keep(buf)
	return body
}

// encodeSet returns the encoding of attrs, copied into the arena.
func (a *Arena) encodeSet(attrs attrSet) []byte {
	buf := attrs.appendJSON(a.buffer())
	body := a.bytes(buf)
	a.keep(buf)
	return body
}

// attrSet returns an empty attribute set with room for n: the arena's,
// reused from item to item (nil arena: a new one).
func (a *Arena) attrSet(n int) attrSet {
	if a == nil {
		return make(attrSet, 0, n)
	}
	return a.set[:0]
}

// keepSet hands the attribute set back after the item is made, cleared
// so that it pins no values.
func (a *Arena) keepSet(s attrSet) {
	if a != nil {
		clear(s)
		a.set = s[:0]
	}
}

// buffer returns the arena's scratch buffer, emptied, for rendering.
func (a *Arena) buffer() []byte {
	if a == nil {
		return nil
	}
	return a.scratch[:0]
}

// keep hands the scratch buffer back after use, so its capacity is reused.
func (a *Arena) keep(b []byte) {
	if a != nil {
		a.scratch = b
	}
}
