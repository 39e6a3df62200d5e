package mapping

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A mapping error names the key and the line, and quotes the value when
// that helps; never a value that may hold a credential. source.dsn holds a
// password more often than not (an error about it is read in CI logs), so
// no error quotes it, whatever it looks like, nor any other value that
// looks like a DSN or a credential.

// dsnPath is the key of the source DSN.
const dsnPath = "source.dsn"

// notShown stands in an error message for a value it must not quote.
const notShown = "(value not shown: it may hold a password)"

// credentialLike matches what may carry a credential: user:password@ in
// a URL or a MySQL DSN, a password= parameter, an AWS access key id.
var credentialLike = regexp.MustCompile(`(?i)^[a-z][a-z0-9+.-]*://[^/?#\s]*:[^\s]*@|@(tcp|unix)\(|\bpassword\s*=|\b(AKIA|ASIA)[A-Z0-9]{16}\b`)

// looksSecret reports whether a value of the mapping file may hold a
// credential.
func looksSecret(v string) bool { return credentialLike.MatchString(v) }

// secretValues are the scalar values of the document that no error may
// quote: every one at or under a dsn key, and every one that looks like a
// credential.
func secretValues(root *yaml.Node) []string {
	var out []string
	seen := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node, secret bool)
	walk = func(n *yaml.Node, secret bool) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		if n.Kind == yaml.AliasNode {
			walk(n.Alias, secret)
			return
		}
		if n.Kind == yaml.ScalarNode && n.Value != "" && (secret || looksSecret(n.Value)) {
			out = append(out, n.Value)
		}
		for i, c := range n.Content {
			dsn := n.Kind == yaml.MappingNode && i%2 == 1 && n.Content[i-1].Value == "dsn"
			walk(c, secret || dsn)
		}
	}
	walk(root, false)
	return out
}

// hideSecrets takes every secret value out of the messages of errs, as
// yaml quotes it (whole, or its first 7 bytes and "..."), and names the
// line of an error that lost a value, and of every error about
// source.dsn, so that the value can be found without being shown.
func hideSecrets(errs Errors, secrets []string) Errors {
	for _, e := range errs {
		msg := e.Msg
		for _, s := range secrets {
			forms := []string{"`" + s + "`", s}
			if len(s) > 10 {
				forms = append(forms, "`"+s[:7]+"...`")
			}
			for _, f := range forms {
				msg = strings.ReplaceAll(msg, f, notShown)
			}
		}
		if msg == e.Msg && e.Path != dsnPath {
			continue
		}
		if e.Line > 0 && !strings.HasPrefix(msg, "line ") {
			msg = fmt.Sprintf("line %d: %s", e.Line, msg)
		}
		e.Msg = msg
	}
	return errs
}
