package sink

import (
	"net/url"
	"strings"
)

// redacted stands in for the userinfo of an endpoint URL.
const redacted = "xxxxx"

// RedactEndpoint is endpoint as it may be printed: any userinfo
// (http://user:pass@host) is replaced, since a proxy's password or a token
// passed as the user name would otherwise land in logs, reports and
// terminals. The whole userinfo goes, not only the password
// (url.URL.Redacted keeps the user name), because a token is often the user
// name alone. A URL that does not parse is cut at its last '@' before the
// path all the same.
func RedactEndpoint(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil {
		if u.User == nil {
			return endpoint
		}
		u.User = url.User(redacted)
		return u.String()
	}
	scheme, rest, ok := strings.Cut(endpoint, "://")
	if !ok {
		scheme, rest = "", endpoint
	}
	authority, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = redacted + authority[i:]
	}
	if ok {
		return scheme + "://" + authority + path
	}
	return authority + path
}

// endpointLabel names where a client sends its requests, for messages.
func endpointLabel(endpoint string) string {
	if endpoint == "" {
		return "the AWS endpoint"
	}
	return RedactEndpoint(endpoint)
}
