// Package endpointtest holds the ways an AWS endpoint reaches a client (a
// flag, AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>, a profile's
// endpoint_url or services section) and what each client dynafold builds
// must make of them: real credentials are refused over plain HTTP to a host
// that is not loopback, whichever source set the endpoint. The DynamoDB
// client's test and the S3 client's test run the same suite (Run).
package endpointtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"
)

// Suite is one client builder under test.
type Suite struct {
	// Service is the client's part of AWS_ENDPOINT_URL_<SERVICE>:
	// "DYNAMODB", "S3"; Other is another client's.
	Service, Other string
	// Name is the service as the refusal names it: "DynamoDB", "S3".
	Name string
	// Build builds the client, with flag as its own endpoint option and
	// allow as --allow-insecure-endpoint, and returns the endpoint and
	// credentials it holds.
	Build func(ctx context.Context, flag string, allow bool) (endpoint *string, creds aws.CredentialsProvider, err error)
	// IsRefusal reports whether err is the refusal (errors.As on
	// *sink.InsecureEndpointError, which this package cannot import).
	IsRefusal func(error) bool
}

// Run checks s.Build on every case: every source of an endpoint is held to
// the rule, on the endpoint the client resolved (building a client sends
// no request); with an endpoint from any source and no credentials in the
// chain, dummy ones sign. The cases set the environment, so the caller
// cannot run in parallel.
func Run(t *testing.T, s Suite) {
	for _, c := range Cases(s.Service, s.Other) {
		t.Run(c.Name, func(t *testing.T) {
			Setenv(t, c)
			endpoint, provider, err := s.Build(t.Context(), c.Flag, c.Allow)
			if c.Refused != "" {
				require.True(t, s.IsRefusal(err), "want a refusal, got %v", err)
				RequireRefusal(t, c, s.Name, err.Error())
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.Endpoint, aws.ToString(endpoint))
			if c.NoCreds && c.Endpoint == "" {
				return // AWS itself: no credentials stays no credentials
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			creds, err := provider.Retrieve(ctx)
			require.NoError(t, err)
			want := Key
			if c.NoCreds {
				want = "dynafold-local"
			}
			require.Equal(t, want, creds.AccessKeyID)
		})
	}
}

// Real-looking credentials, which no message may print.
const (
	Key    = "AKIAREALLOOKINGKEY42"
	Secret = "the-secret-key-value"
	Token  = "the-session-token-value"
	// Password is the password in the cases' endpoint URLs.
	Password = "hunter2"
)

// Case is one way an endpoint reaches a client, and what the client must
// make of it.
type Case struct {
	Name    string
	Flag    string            // the client's own endpoint option
	Env     map[string]string // besides the credentials
	Profile string            // the content of the AWS config file
	NoCreds bool              // no credentials in the chain
	Allow   bool              // --allow-insecure-endpoint
	// Refused is the endpoint, as printed, that the client must refuse;
	// empty: the client is built.
	Refused string
	// Endpoint is where a built client sends ("": AWS itself).
	Endpoint string
}

// Cases are the ways an endpoint is set for service ("DYNAMODB", "S3"),
// and other's (the other service's) settings, which must not leak into it.
func Cases(service, other string) []Case {
	const public, private = "http://203.0.113.7:8000", "http://10.1.2.3:8000"
	const loopback2 = "http://127.0.0.2:8000"
	withPassword := "http://admin:" + Password + "@10.1.2.3:8000"
	env := "AWS_ENDPOINT_URL_" + service
	services := func(svc, endpoint string) string {
		return "[default]\nservices = remote\n\n[services remote]\n" + svc + " =\n  endpoint_url = " + endpoint + "\n"
	}
	return []Case{
		{Name: "flag, public address", Flag: public, Refused: public},
		{Name: "flag, private address", Flag: private, Refused: private},
		{Name: "flag, 127.0.0.2", Flag: loopback2, Endpoint: loopback2},
		{Name: "flag, ::1", Flag: "http://[::1]:8000", Endpoint: "http://[::1]:8000"},
		{Name: "flag, localhost", Flag: "http://localhost:8000", Endpoint: "http://localhost:8000"},
		{Name: "flag, https", Flag: "https://203.0.113.7", Endpoint: "https://203.0.113.7"},
		{Name: "flag, allowed", Flag: private, Allow: true, Endpoint: private},
		{Name: "flag, no credentials", Flag: private, NoCreds: true, Endpoint: private},
		{Name: "flag, userinfo", Flag: withPassword, Refused: "http://xxxxx@10.1.2.3:8000"},
		{Name: "AWS_ENDPOINT_URL", Env: map[string]string{"AWS_ENDPOINT_URL": public}, Refused: public},
		{Name: "AWS_ENDPOINT_URL, loopback", Env: map[string]string{"AWS_ENDPOINT_URL": loopback2}, Endpoint: loopback2},
		{Name: "AWS_ENDPOINT_URL, no credentials", Env: map[string]string{"AWS_ENDPOINT_URL": public}, NoCreds: true, Endpoint: public},
		{Name: env, Env: map[string]string{env: private}, Refused: private},
		{Name: env + ", allowed", Env: map[string]string{env: private}, Allow: true, Endpoint: private},
		{Name: env + ", https", Env: map[string]string{env: "https://10.1.2.3"}, Endpoint: "https://10.1.2.3"},
		{Name: env + ", userinfo", Env: map[string]string{env: withPassword}, Refused: "http://xxxxx@10.1.2.3:8000"},
		{Name: env + " over AWS_ENDPOINT_URL", Env: map[string]string{"AWS_ENDPOINT_URL": "https://203.0.113.7", env: private}, Refused: private},
		{Name: "AWS_ENDPOINT_URL_" + other + " is another client's", Env: map[string]string{"AWS_ENDPOINT_URL_" + other: public}},
		{Name: "flag over " + env, Flag: loopback2, Env: map[string]string{env: public}, Endpoint: loopback2},
		{Name: "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", Env: map[string]string{env: public, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}},
		{Name: "profile endpoint_url", Profile: "[default]\nendpoint_url = " + public + "\n", Refused: public},
		{Name: "named profile endpoint_url", Env: map[string]string{"AWS_PROFILE": "remote"}, Profile: "[profile remote]\nendpoint_url = " + private + "\n", Refused: private},
		{Name: "profile services section", Profile: services(strings.ToLower(service), private), Refused: private},
		{Name: "profile services section, another client's", Profile: services(strings.ToLower(other), private)},
	}
}

// Setenv puts c's configuration in the environment, and nothing of the
// machine's: no profile, credentials or endpoint of its own, no instance
// metadata service (asking it only adds timeouts), region us-east-1.
// Tests that call it cannot run in parallel.
func Setenv(t *testing.T, c Case) {
	t.Helper()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
		// Unset, not empty: the SDK tells AWS_ENDPOINT_URL set but empty
		// from not set at all.
		t.Setenv(k, "")
		require.NoError(t, os.Unsetenv(k))
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "config")
	t.Setenv("AWS_CONFIG_FILE", config)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "us-east-1")
	if !c.NoCreds {
		t.Setenv("AWS_ACCESS_KEY_ID", Key)
		t.Setenv("AWS_SECRET_ACCESS_KEY", Secret)
		t.Setenv("AWS_SESSION_TOKEN", Token)
	}
	for k, v := range c.Env {
		t.Setenv(k, v)
	}
	if c.Profile != "" {
		require.NoError(t, os.WriteFile(config, []byte(c.Profile), 0o600))
	}
}

// RequireRefusal checks the message of a refusal of c by a client of
// service ("DynamoDB", "S3"): it names the endpoint (its userinfo
// redacted) and the flag, and prints no secret.
func RequireRefusal(t *testing.T, c Case, service string, msg string) {
	t.Helper()
	require.Contains(t, msg, "refusing to sign "+service+" requests to "+c.Refused+" ")
	require.Contains(t, msg, "--allow-insecure-endpoint")
	require.Contains(t, msg, Key[:4]+"****")
	for _, secret := range []string{Key, Secret, Token, Password} {
		require.NotContains(t, msg, secret)
	}
}
