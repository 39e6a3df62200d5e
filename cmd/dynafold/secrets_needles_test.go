package main

import (
	"encoding/binary"
	"fmt"
	mathrand "math/rand/v2"
	"net/url"
	"strings"
)

// What TestSecrets looks for: the secrets it runs with, and any 4
// characters of one of them in a row, anywhere. The secrets are made of
// consonants that are no hex digit, upper and lower case in turn, so that
// no 4 of their characters in a row make a word, a hex run, a key or
// anything else dynafold prints; those of the passwords that URLs and
// DSNs must escape (@ : / ? & = % + # space, non-ASCII) sit between them.

const (
	secretUpper = "GHJKMNPQRSTVWXZ"
	secretLower = "ghjkmnpqrstvwxz"
	// keyIDChars are those of an access key id after its prefix: not
	// its digits, which runs, ports and timestamps are full of.
	keyIDChars = secretUpper
)

// randSecret is n characters of secret letters, upper and lower case in
// turn.
func randSecret(n int) string {
	b := make([]byte, n)
	for i := range b {
		set := secretLower
		if i%2 == 0 {
			set = secretUpper
		}
		b[i] = set[mathrand.IntN(len(set))]
	}
	return string(b)
}

func randKeyID(prefix string) string {
	b := []byte(prefix)
	for len(b) < 20 {
		b = append(b, keyIDChars[mathrand.IntN(len(keyIDChars))])
	}
	return string(b)
}

// awsSecrets are credentials: those the runs sign with (from the
// environment, which the standard AWS chain reads; local endpoints accept
// any signature), or others of the same shapes that an endpoint quotes.
type awsSecrets struct {
	keyID, secret, token string
}

func newAWSSecrets(keyPrefix, tokenPrefix string) awsSecrets {
	return awsSecrets{
		keyID:  randKeyID(keyPrefix),
		secret: randSecret(20) + "/" + randSecret(9) + "+" + randSecret(9),
		token:  tokenPrefix + randSecret(60) + "/" + randSecret(20) + "==",
	}
}

func (a awsSecrets) env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + a.keyID, "AWS_SECRET_ACCESS_KEY=" + a.secret, "AWS_SESSION_TOKEN=" + a.token}
}

// echo is what an endpoint quoting the credentials says of them: the
// secret key as it is, which only knowing it can redact.
func (a awsSecrets) echo() string {
	return a.keyID + ", session token " + a.token + ", signed with " + a.secret
}

// echoNamed names the secret key, as a configuration dump would: all an
// endpoint can say of credentials a run was not given, for the shapes of
// AWS credentials to be found by.
func (a awsSecrets) echoNamed() string {
	return a.keyID + ", session token " + a.token + ", aws_secret_access_key=" + a.secret
}

// secretPassword makes a password with the characters DSNs must escape
// and non-ASCII letters, between two runs of secret letters; core is the
// first run, which every escaping keeps as it is. Its first @ comes
// before any / or space: a pattern for user:password@ that stops at the
// first @ cuts it there, and leaves the rest (app:xxxxx@p/ss…@tcp(…)).
func secretPassword() (password, core string) {
	core = randSecret(12)
	return core + "@p/ss:w?rd&x=%+# !é€" + randSecret(6), core
}

// percentEncodeAll escapes every byte, as some tools write passwords: a
// form no canonical escaping produces, so redaction cannot match it by
// re-escaping the password.
func percentEncodeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// encodings are the forms a password can be written in, whole.
func encodings(password string) []string {
	userinfo := strings.TrimPrefix(url.UserPassword("", password).String(), ":")
	return []string{password, url.QueryEscape(password), url.PathEscape(password), userinfo,
		percentEncodeAll(password), strings.ToLower(percentEncodeAll(password))}
}

// needles finds secrets in text: every run of 4 characters of each
// secret, and whole encodings. Runs of 4 ASCII bytes are looked up in a
// map while the text is read once (the runs number in the hundreds, and
// the files searched in megabytes); the others one by one.
type needles struct {
	quads map[uint32]string // 4 ASCII bytes → the secret they come from
	other []needle
}

type needle struct{ text, secret string }

func newNeedles() *needles { return &needles{quads: map[uint32]string{}} }

// addRuns adds every run of 4 characters of secret, except public ones
// (an access key id's AKIA or ASIA, which masking shows).
func (n *needles) addRuns(secret string, public ...string) {
	r := []rune(secret)
	for i := 0; i+4 <= len(r); i++ {
		w := string(r[i : i+4])
		skip := false
		for _, p := range public {
			skip = skip || w == p
		}
		switch {
		case skip:
		case len(w) == 4:
			n.quads[binary.LittleEndian.Uint32([]byte(w))] = secret
		default:
			n.other = append(n.other, needle{w, secret})
		}
	}
}

// addWhole adds texts that must not appear whole.
func (n *needles) addWhole(secret string, texts ...string) {
	for _, t := range texts {
		n.other = append(n.other, needle{t, secret})
	}
}

// find returns the first needle found in text, where, and its secret.
func (n *needles) find(text string) (found, secret string, at int) {
	for i := 0; i+4 <= len(text); i++ {
		q := uint32(text[i]) | uint32(text[i+1])<<8 | uint32(text[i+2])<<16 | uint32(text[i+3])<<24
		if s, ok := n.quads[q]; ok {
			return text[i : i+4], s, i
		}
	}
	for _, nd := range n.other {
		if i := strings.Index(text, nd.text); i >= 0 {
			return nd.text, nd.secret, i
		}
	}
	return "", "", -1
}
