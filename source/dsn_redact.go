package source

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// redacted replaces a password wherever it is found.
const redacted = "xxxxx"

// userinfo matches "user:secret@" in URLs and MySQL DSNs, a second line of
// defence for text the password matching did not cover. The secret runs to
// the last @ before a space or a slash: the MySQL driver splits
// user:p@ss@tcp(…) at its last @, and a password may hold a raw @.
var userinfo = regexp.MustCompile(`((?:^|//|\s)[^:/@\s'"]*:)[^\s/]+@`)

// passwordParam matches the value of a password= parameter: in a URL's
// query or a key=value DSN. It catches the DSNs whose password could not
// be extracted because they do not parse.
var passwordParam = regexp.MustCompile(`(?i)((?:^|[?&\s])password\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]+)`)

// Redact removes the password from any text, such as a driver's error
// message: first the known password in every form it can be written in
// (see RedactPassword), then anything shaped like the password of a URL,
// a MySQL DSN or a password= parameter. The known password goes first:
// the patterns cut a password with an @ in it at the wrong @, and would
// leave the rest of it behind.
func (d DSN) Redact(s string) string {
	s = d.RedactPassword(s)
	s = userinfo.ReplaceAllString(s, "${1}"+redacted+"@")
	return passwordParam.ReplaceAllString(s, "${1}"+redacted)
}

// RedactPassword replaces only the known password, in any of the forms
// text can carry it in: as it is, percent-encoded in part or in full (in
// upper or lower case hex, as url.QueryEscape, url.PathEscape, userinfo
// escaping and tools that escape every byte write it), with + for a space,
// with backslash escapes (key=value quoting, JSON) or \u00XX (JSON). It
// leaves text that only looks like a DSN alone, so it can be run over
// anything a command prints.
func (d DSN) RedactPassword(s string) string {
	for _, p := range d.passwords {
		s = replaceEncoded(s, p)
	}
	return s
}

// RedactError wraps err so that its message never contains the password.
// errors.Is and errors.As still see the original error.
func (d DSN) RedactError(err error) error {
	// Even without a known password: the patterns in Redact still apply
	// to a DSN that did not parse far enough to yield one.
	if err == nil {
		return err
	}
	return &redactedError{msg: d.Redact(err.Error()), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// replaceEncoded replaces every run of s that decodes to secret, whatever
// mix of escapes it uses, with redacted.
func replaceEncoded(s, secret string) string {
	if secret == "" {
		return s
	}
	var b strings.Builder
	last := 0
	first := secret[0]
	for i := 0; i < len(s); {
		n := 0
		// Only these bytes can begin a form of secret.
		if c := s[i]; c == first || c == '%' || c == '\\' || c == '+' {
			n = matchEncoded(s[i:], secret)
		}
		if n == 0 {
			i++
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(redacted)
		i += n
		last = i
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// matchEncoded returns the length of the prefix of s that decodes to
// secret, or 0. Each byte of secret may be written as itself, as %XX (either
// case), as \u00XX (an ASCII byte), after a backslash (a quote or a
// backslash), or as + (a space). Where two readings fit (a % of the secret
// written as itself or as %25) both are tried: a wrong one fails within a
// byte or two.
func matchEncoded(s, secret string) int {
	if secret == "" {
		return 0
	}
	return matchFrom(s, secret, 0, 0)
}

// matchFrom matches secret[j:] against s[k:], returning where the match
// ends in s, or 0.
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
	if k+1 < len(s) && s[k] == '\\' && s[k+1] == c && (c == '\'' || c == '"' || c == '\\') {
		if n := matchFrom(s, secret, k+2, j+1); n > 0 {
			return n
		}
	}
	if c < utf8.RuneSelf && k+5 < len(s) && s[k] == '\\' && s[k+1] == 'u' && s[k+2] == '0' && s[k+3] == '0' && hexByte(s[k+4], s[k+5]) == int(c) {
		return matchFrom(s, secret, k+6, j+1)
	}
	return 0
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
