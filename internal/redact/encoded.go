package redact

import (
	"strings"
	"unicode/utf8"
)

// Encoded replaces every run of s that decodes to secret, whatever mix of
// escapes it uses, with mask: the secret as it is, percent-encoded in part
// or in full (%XX in either case, as url.QueryEscape, url.PathEscape and
// encoders of every byte write it), with + for a space, with backslash
// escapes of punctuation (key=value quoting, JSON) or \u00XX (JSON).
func Encoded(s, secret, mask string) string {
	if secret == "" {
		return s
	}
	var b strings.Builder
	first := secret[0]
	last := 0
	for i := 0; i < len(s); {
		n := 0
		// Only these bytes can begin a form of secret.
		if c := s[i]; c == first || c == '%' || c == '\\' || c == '+' {
			n = matchFrom(s[i:], secret, 0, 0)
		}
		if n == 0 {
			i++
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(mask)
		i += n
		last = i
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// matchFrom matches secret[j:] against s[k:], returning where the match
// ends in s, or 0. Each byte of secret may be written as itself, as %XX,
// as \u00XX (an ASCII byte), after a backslash (punctuation), or as + (a
// space). Where two readings fit (a % of the secret written as
// itself or as %25) both are tried: a wrong one fails within a byte or
// two.
func matchFrom(s, secret string, k, j int) int {
	if j == len(secret) {
		return k
	}
	c := secret[j]
	if k < len(s) && (s[k] == c || s[k] == '+' && c == ' ') {
		if n := matchFrom(s, secret, k+1, j+1); n > 0 {
			return n
		}
	}
	if k+2 < len(s) && s[k] == '%' && hexByte(s[k+1], s[k+2]) == int(c) {
		if n := matchFrom(s, secret, k+3, j+1); n > 0 {
			return n
		}
	}
	if k+1 < len(s) && s[k] == '\\' && s[k+1] == c && isPunct(c) {
		if n := matchFrom(s, secret, k+2, j+1); n > 0 {
			return n
		}
	}
	if c < utf8.RuneSelf && k+5 < len(s) && s[k] == '\\' && s[k+1] == 'u' && s[k+2] == '0' && s[k+3] == '0' && hexByte(s[k+4], s[k+5]) == int(c) {
		return matchFrom(s, secret, k+6, j+1)
	}
	return 0
}

// isPunct reports an ASCII byte that a backslash before it leaves as it
// is (\' in key=value quoting; \", \\ and \/ in JSON), unlike a letter
// or digit (\n, \u0041).
func isPunct(c byte) bool {
	return c > ' ' && c < utf8.RuneSelf && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9')
}

// hexByte decodes two hex digits, or returns -1.
func hexByte(hi, lo byte) int {
	h, l := unhex(hi), unhex(lo)
	if h < 0 || l < 0 {
		return -1
	}
	return h<<4 | l
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}
