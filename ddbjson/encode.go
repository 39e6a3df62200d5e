// Package ddbjson encodes DynamoDB items as DynamoDB JSON, the wire form of
// the low-level API ({"name":{"S":"text"}}), byte for byte as the AWS SDK
// for Go serializes them (up to the order of map keys). The writer sends
// items encoded once this way instead of handing the SDK a tree of
// attribute values to serialize on every request, and DynamoDB JSON lines
// exports can reuse it.
//
// Every function appends to dst and returns the extended slice, so that a
// caller can encode many items into one buffer without allocating.
package ddbjson

import (
	"encoding/base64"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// AppendItem appends an item (or a key) as a JSON object of attribute
// values. Attributes come in map order: DynamoDB does not care, and
// sorting would cost more than the encoding itself.
func AppendItem(dst []byte, item map[string]types.AttributeValue) []byte {
	dst = append(dst, '{')
	first := true
	for name, v := range item {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = AppendString(dst, name)
		dst = append(dst, ':')
		dst = AppendValue(dst, v)
	}
	return append(dst, '}')
}

// AppendValue appends one attribute value as its one-member union object,
// {"S":"text"}. Nil lists, maps and sets are written empty and a nil
// binary as null, as the SDK writes them. A value of an unknown type (nil, or a member added to the
// SDK later) becomes {}, as the SDK leaves an unset union empty.
func AppendValue(dst []byte, av types.AttributeValue) []byte {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		dst = append(dst, `{"S":`...)
		dst = AppendString(dst, v.Value)
	case *types.AttributeValueMemberN:
		dst = append(dst, `{"N":`...)
		dst = AppendString(dst, v.Value)
	case *types.AttributeValueMemberB:
		dst = append(dst, `{"B":`...)
		dst = appendBlob(dst, v.Value)
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			return append(dst, `{"BOOL":true}`...)
		}
		return append(dst, `{"BOOL":false}`...)
	case *types.AttributeValueMemberNULL:
		if v.Value {
			return append(dst, `{"NULL":true}`...)
		}
		return append(dst, `{"NULL":false}`...)
	case *types.AttributeValueMemberL:
		dst = append(dst, `{"L":[`...)
		for i, e := range v.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendValue(dst, e)
		}
		dst = append(dst, ']')
	case *types.AttributeValueMemberM:
		dst = append(dst, `{"M":`...)
		dst = AppendItem(dst, v.Value)
	case *types.AttributeValueMemberSS:
		dst = append(dst, `{"SS":`...)
		dst = appendStrings(dst, v.Value)
	case *types.AttributeValueMemberNS:
		dst = append(dst, `{"NS":`...)
		dst = appendStrings(dst, v.Value)
	case *types.AttributeValueMemberBS:
		dst = append(dst, `{"BS":[`...)
		for i, b := range v.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendBlob(dst, b)
		}
		dst = append(dst, ']')
	default:
		return append(dst, "{}"...)
	}
	return append(dst, '}')
}

// appendStrings appends a JSON array of strings; nil is [], as the SDK
// writes an unset list.
func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s)
	}
	return append(dst, ']')
}

// appendBlob appends binary as a base64 (standard alphabet, padded) JSON
// string; nil is null, as the SDK writes it.
func appendBlob(dst []byte, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// AppendString appends s as a JSON string with the SDK's escaping:
// quote, backslash, control characters and DEL escaped (\n, \r, \t by
// name, the rest as \u00XX), U+2028 and U+2029 as \u2028 and \u2029 (they
// end lines in JavaScript), invalid UTF-8 replaced by U+FFFD, everything
// else as is.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Runs of bytes written as they are, the common case, in a
		// tight loop.
		for i < len(s) && plain[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hex = "0123456789abcdef"

// plain marks the bytes AppendString writes as they are: printable ASCII
// other than quote and backslash.
var plain = func() (t [256]bool) {
	for b := 0x20; b < 0x7F; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()
