package plan

import (
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/value"
)

// A key template is a pattern: literal bytes and holes, each hole standing
// for any string over the bytes its value can contain. Two entities can
// produce the same key exactly when their patterns' languages intersect,
// which is decided on the product of the two patterns' automata.

// charset is a set of bytes.
type charset [4]uint64

func (c *charset) add(s string) {
	for i := 0; i < len(s); i++ {
		c[s[i]>>6] |= 1 << (s[i] & 63)
	}
}

func (c charset) has(b byte) bool { return c[b>>6]&(1<<(b&63)) != 0 }

func (c charset) hasAll(s string) bool {
	for i := 0; i < len(s); i++ {
		if !c.has(s[i]) {
			return false
		}
	}
	return true
}

func (c charset) and(d charset) charset {
	return charset{c[0] & d[0], c[1] & d[1], c[2] & d[2], c[3] & d[3]}
}

func (c charset) empty() bool { return c == charset{} }

func setOf(s string) charset {
	var c charset
	c.add(s)
	return c
}

const digits = "0123456789"

var (
	anyBytes = charset{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
	// alnum is what ordinary identifiers are made of: the "plausible"
	// values used to tell a likely collision from one that needs a value
	// containing punctuation.
	alnum     = setOf(digits + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
	intSet    = setOf(digits + "-")
	numSet    = setOf(digits + "-+.eE")
	floatSet  = setOf(digits + "-+.eEInfNa")
	boolSet   = setOf("truefals")
	dateSet   = setOf(digits + "-")
	stampSet  = setOf(digits + "-:.TZ")
	hexSet    = setOf(digits + "abcdef")
	digitsSet = setOf(digits)
)

// kindChars is what the text of a value of kind k can contain.
func kindChars(k value.Kind, keyType mapping.AttrType) charset {
	switch k {
	case value.Int:
		return intSet
	case value.Decimal:
		return numSet
	case value.Float:
		return floatSet
	case value.Bool:
		return boolSet
	case value.Date:
		return dateSet
	case value.Timestamp:
		return stampSet
	case value.Bytes:
		if keyType == mapping.TypeB {
			return anyBytes
		}
		return hexSet
	}
	return anyBytes // string, JSON, list, or unknown
}

// exprChars is what an expression's value can contain, after transforms.
func exprChars(e *mapping.Expr, kind value.Kind, keyType mapping.AttrType) charset {
	c := kindChars(kind, keyType)
	for _, t := range e.Transforms {
		switch t.Name {
		case "pad", "shard":
			c = digitsSet
		case "iso":
			c = stampSet
		case "epoch":
			c = intSet
		case "date":
			c = dateSet
		}
	}
	return c
}

// token is a literal byte or a hole.
type token struct {
	lit  byte
	hole bool
	cs   charset
}

type pattern []token

// compilePattern turns a template into a pattern; kinds gives the value
// kind of each row position.
func compilePattern(t *mapping.Template, kinds []value.Kind, keyType mapping.AttrType) pattern {
	var p pattern
	for _, part := range t.Parts() {
		if part.Expr == nil {
			for i := 0; i < len(part.Lit); i++ {
				p = append(p, token{lit: part.Lit[i]})
			}
			continue
		}
		p = append(p, token{hole: true, cs: exprChars(part.Expr, kindAt(kinds, part.Expr.Position()), keyType)})
	}
	return p
}

func kindAt(kinds []value.Kind, i int) value.Kind {
	if i >= 0 && i < len(kinds) {
		return kinds[i]
	}
	return value.Null
}

// restrict narrows every hole to the plausible bytes.
func (p pattern) restrict(to charset) pattern {
	out := make(pattern, len(p))
	for i, t := range p {
		if t.hole {
			t.cs = t.cs.and(to)
		}
		out[i] = t
	}
	return out
}

// intersects reports whether some string matches both patterns. Each
// hole matches one or more bytes of its set: a value in a key is never
// empty in practice (an empty table key is rejected, and numbers and
// dates have digits).
func intersects(a, b pattern) bool {
	type state struct {
		i, j   int
		ai, bi bool // inside a hole (has consumed at least one byte)
	}
	seen := map[state]bool{}
	stack := []state{{}}
	push := func(s state) {
		if !seen[s] {
			seen[s] = true
			stack = append(stack, s)
		}
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s.i == len(a) && s.j == len(b) {
			return true
		}
		// Leave a hole once it has matched something.
		if s.ai {
			push(state{s.i + 1, s.j, false, s.bi})
		}
		if s.bi {
			push(state{s.i, s.j + 1, s.ai, false})
		}
		if s.i == len(a) || s.j == len(b) {
			continue
		}
		ta, tb := a[s.i], b[s.j]
		switch {
		case !ta.hole && !tb.hole:
			if ta.lit == tb.lit {
				push(state{s.i + 1, s.j + 1, false, false})
			}
		case !ta.hole:
			if tb.cs.has(ta.lit) {
				push(state{s.i + 1, s.j, false, true})
			}
		case !tb.hole:
			if ta.cs.has(tb.lit) {
				push(state{s.i, s.j + 1, true, false})
			}
		default:
			if !ta.cs.and(tb.cs).empty() {
				push(state{s.i, s.j, true, true})
			}
		}
	}
	return false
}
