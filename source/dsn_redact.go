package source

import (
	"regexp"

	"github.com/dynafold/dynafold/internal/redact"
)

// redacted replaces a password wherever it is found.
const redacted = redact.Mask

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
		s = redact.Encoded(s, p, redacted)
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
