package sink

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
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
	Service   string // "DynamoDB", "S3"
	Endpoint  string
	AccessKey string
}

func (e *InsecureEndpointError) Error() string {
	return fmt.Sprintf("refusing to sign %s requests to %s with AWS credentials (access key %s, and any session token) over plain HTTP to a host that is not loopback: use https, an endpoint on 127.0.0.1 or localhost, or --allow-insecure-endpoint (env DYNAFOLD_ALLOW_INSECURE_ENDPOINT=true) if this network is trusted",
		e.Service, RedactEndpoint(e.Endpoint), maskKey(e.AccessKey))
}

// credentialsWait bounds the look for credentials in the chain: with none
// configured, the chain's last resort (the instance metadata service) may
// otherwise wait for a host that is not there.
const credentialsWait = 2 * time.Second

// CheckEndpoint readies cfg for a client of service whose endpoint is
// endpoint, the URL the client resolved from whichever source set it (a
// flag, AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL, a profile's
// endpoint_url or its services section; empty: AWS itself). Every AWS
// client dynafold builds goes through it, so that no source of an endpoint
// escapes the rule. With an endpoint, the region defaults to us-east-1 and,
// when the chain has no credentials, dummy ones sign (local servers accept
// any signature); real credentials bound for plain HTTP to a host that is
// not loopback are an *InsecureEndpointError unless allowInsecure.
func CheckEndpoint(ctx context.Context, cfg *aws.Config, service, endpoint string, allowInsecure bool) error {
	if endpoint == "" {
		return nil
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	rctx, cancel := context.WithTimeout(ctx, credentialsWait)
	creds, err := cfg.Credentials.Retrieve(rctx)
	cancel()
	switch {
	case err != nil:
		cfg.Credentials = credentials.NewStaticCredentialsProvider("dynafold-local", "dynafold-local", "")
	case insecureEndpoint(endpoint) && !allowInsecure:
		return &InsecureEndpointError{Service: service, Endpoint: endpoint, AccessKey: creds.AccessKeyID}
	}
	return nil
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
