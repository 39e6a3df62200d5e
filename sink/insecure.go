package sink

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// A SigV4 signature does not hide what it signs: over plain HTTP the
// access key id and, for temporary credentials, the session token travel
// in cleartext headers, and the signed request can be replayed for minutes.
// Local DynamoDB-compatible servers (dynalite, DynamoDB Local) listen on
// loopback over HTTP, and dynafold signs for them with dummy credentials
// when the AWS chain has none; real credentials are only sent over HTTP to
// a loopback address, unless the operator says otherwise.

// InsecureEndpointError refuses to send real credentials in cleartext.
type InsecureEndpointError struct {
	Endpoint  string
	AccessKey string
}

func (e *InsecureEndpointError) Error() string {
	return fmt.Sprintf("refusing to sign requests to %s with AWS credentials (access key %s, and any session token) over plain HTTP to a host that is not loopback: use https, an endpoint on 127.0.0.1 or localhost, or --allow-insecure-endpoint (env DYNAFOLD_ALLOW_INSECURE_ENDPOINT=true) if this network is trusted",
		e.Endpoint, maskKey(e.AccessKey))
}

// insecureEndpoint reports whether endpoint is plain HTTP to a host that
// is not loopback.
func insecureEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// maskKey shows the first four characters of an access key id, enough to
// tell which one, not enough to use it.
func maskKey(k string) string {
	if len(k) <= 4 {
		return strings.Repeat("*", len(k))
	}
	return k[:4] + strings.Repeat("*", len(k)-4)
}
