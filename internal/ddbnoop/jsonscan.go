package ddbnoop

import (
	"bytes"
	"errors"
	"unicode/utf8"
)

// errSyntax reports malformed JSON. The server maps it to DynamoDB's
// SerializationException.
var errSyntax = errors.New("malformed JSON")

// maxDepth bounds nesting while skipping or sizing values. DynamoDB allows 32
// levels of nested attribute values; the extra room covers the request
// envelope. The bound keeps a hostile body from recursing without limit.
const maxDepth = 64

// scanner is a minimal, allocation-free JSON reader over a request body.
//
// BatchWriteItem is the hot path of this server, and encoding/json would
// allocate a map and a RawMessage per attribute. The scanner instead walks
// the bytes once, returning sub-slices of the body for the few values the
// server needs (key attribute values) and sizing everything else in place.
// It is lenient where leniency costs nothing (control characters inside
// strings are not rejected) and strict where a mistake would desynchronise
// the walk.
type scanner struct {
	b   []byte
	pos int
}

func (s *scanner) skipWS() {
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte without consuming it, or 0 at EOF.
func (s *scanner) peek() byte {
	s.skipWS()
	if s.pos < len(s.b) {
		return s.b[s.pos]
	}
	return 0
}

// consume consumes c if it is the next non-space byte.
func (s *scanner) consume(c byte) bool {
	if s.peek() == c {
		s.pos++
		return true
	}
	return false
}

// str reads a JSON string and returns its contents between the quotes, still
// escaped, and whether any escape sequence occurs in it.
func (s *scanner) str() (raw []byte, escaped bool, err error) {
	if s.peek() != '"' {
		return nil, false, errSyntax
	}
	s.pos++
	start := s.pos
	// Fast path: most strings contain no backslash, so the closing quote is
	// the next quote byte.
	q := bytes.IndexByte(s.b[start:], '"')
	if q < 0 {
		return nil, false, errSyntax
	}
	if bytes.IndexByte(s.b[start:start+q], '\\') < 0 {
		s.pos = start + q + 1
		return s.b[start : start+q], false, nil
	}
	for i := start; i < len(s.b); i++ {
		switch s.b[i] {
		case '\\':
			i++ // skip the escaped byte; \uXXXX digits are plain bytes
		case '"':
			s.pos = i + 1
			return s.b[start:i], true, nil
		}
	}
	return nil, false, errSyntax
}

// member advances to the next member of an object whose '{' has already been
// consumed, returning its name (raw) with the ':' consumed. ok is false at the
// closing '}'. first must be true for the first call on an object.
func (s *scanner) member(first bool) (name []byte, escaped, ok bool, err error) {
	if !first {
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil, false, false, nil
		default:
			return nil, false, false, errSyntax
		}
	} else if s.consume('}') {
		return nil, false, false, nil
	}
	name, escaped, err = s.str()
	if err != nil {
		return nil, false, false, err
	}
	if !s.consume(':') {
		return nil, false, false, errSyntax
	}
	return name, escaped, true, nil
}

// element advances to the next element of an array whose '[' has already been
// consumed. ok is false at the closing ']'.
func (s *scanner) element(first bool) (ok bool, err error) {
	if !first {
		switch s.peek() {
		case ',':
			s.pos++
			return true, nil
		case ']':
			s.pos++
			return false, nil
		default:
			return false, errSyntax
		}
	}
	return !s.consume(']'), nil
}

// skipValue skips one JSON value of any kind.
func (s *scanner) skipValue(depth int) error {
	if depth > maxDepth {
		return errSyntax
	}
	switch s.peek() {
	case '"':
		_, _, err := s.str()
		return err
	case '{':
		s.pos++
		for first := true; ; first = false {
			_, _, ok, err := s.member(first)
			if err != nil || !ok {
				return err
			}
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
		}
	case '[':
		s.pos++
		for first := true; ; first = false {
			ok, err := s.element(first)
			if err != nil || !ok {
				return err
			}
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
		}
	case 0:
		return errSyntax
	default:
		// number, true, false or null: consume the literal's characters.
		start := s.pos
		for s.pos < len(s.b) && isLiteralByte(s.b[s.pos]) {
			s.pos++
		}
		if s.pos == start {
			return errSyntax
		}
		return nil
	}
}

func isLiteralByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// decodedLen returns the UTF-8 byte length of a JSON string's contents once
// its escapes are decoded, without allocating.
func decodedLen(raw []byte, escaped bool) (int, error) {
	if !escaped {
		return len(raw), nil
	}
	n := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			n++
			continue
		}
		i++
		if i >= len(raw) {
			return 0, errSyntax
		}
		if raw[i] != 'u' {
			n++ // \" \\ \/ \b \f \n \r \t all decode to one byte
			continue
		}
		r, ok := hex4(raw, i+1)
		if !ok {
			return 0, errSyntax
		}
		i += 4
		// A high surrogate followed by an escaped low surrogate is one
		// supplementary-plane rune: 4 bytes of UTF-8.
		if r >= 0xD800 && r < 0xDC00 && i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
			if r2, ok := hex4(raw, i+3); ok && r2 >= 0xDC00 && r2 < 0xE000 {
				n += 4
				i += 6
				continue
			}
		}
		if r >= 0xD800 && r < 0xE000 {
			n += 3 // a lone surrogate decodes to U+FFFD
			continue
		}
		n += utf8.RuneLen(r)
	}
	return n, nil
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
