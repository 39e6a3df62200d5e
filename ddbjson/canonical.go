package ddbjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Canonical rewrites a JSON document with every object's members sorted by
// their raw (still escaped) names, and keeps every string, number and
// literal byte for byte: two encodings of the same item compare equal
// after Canonical exactly when they differ only in key order. Tests use it
// to hold the encoder to the SDK's serializer.
func Canonical(doc []byte) ([]byte, error) {
	if !json.Valid(doc) {
		return nil, errors.New("not valid JSON")
	}
	out, rest, err := canonicalValue(nil, bytes.TrimSpace(doc))
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("trailing data %q", rest)
	}
	return out, nil
}

func canonicalValue(dst, b []byte) ([]byte, []byte, error) {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return nil, nil, errors.New("unexpected end")
	}
	switch b[0] {
	case '{':
		type member struct{ name, value []byte }
		var members []member
		b = bytes.TrimLeft(b[1:], " \t\r\n")
		for len(b) > 0 && b[0] != '}' {
			name, rest := rawString(b)
			rest = bytes.TrimLeft(rest, " \t\r\n")
			v, rest, err := canonicalValue(nil, rest[1:]) // after ':'
			if err != nil {
				return nil, nil, err
			}
			members = append(members, member{name, v})
			b = bytes.TrimLeft(rest, " \t\r\n")
			if b[0] == ',' {
				b = bytes.TrimLeft(b[1:], " \t\r\n")
			}
		}
		slices.SortFunc(members, func(x, y member) int { return bytes.Compare(x.name, y.name) })
		dst = append(dst, '{')
		for i, m := range members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(append(append(dst, m.name...), ':'), m.value...)
		}
		return append(dst, '}'), b[1:], nil
	case '[':
		dst = append(dst, '[')
		b = bytes.TrimLeft(b[1:], " \t\r\n")
		for i := 0; len(b) > 0 && b[0] != ']'; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			dst, b, err = canonicalValue(dst, b)
			if err != nil {
				return nil, nil, err
			}
			b = bytes.TrimLeft(b, " \t\r\n")
			if b[0] == ',' {
				b = b[1:]
			}
			b = bytes.TrimLeft(b, " \t\r\n")
		}
		return append(dst, ']'), b[1:], nil
	case '"':
		s, rest := rawString(b)
		return append(dst, s...), rest, nil
	}
	i := bytes.IndexAny(b, ",]} \t\r\n")
	if i < 0 {
		i = len(b)
	}
	return append(dst, b[:i]...), b[i:], nil
}

// rawString splits a JSON string, quotes and escapes included, off b.
func rawString(b []byte) ([]byte, []byte) {
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return b[:i+1], b[i+1:]
		}
	}
	return b, nil
}
