package sink

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/endpointtest"
)

// Plain HTTP is refused for real credentials only off loopback.
func TestInsecureEndpoint(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		insecure bool
	}{
		{"http://127.0.0.1:58000", false},
		{"http://127.0.0.2:8000", false},
		{"http://127.9.9.9:8000", false},
		{"http://localhost:8000", false},
		{"http://LOCALHOST:8000", false},
		{"http://dynamo.localhost:8000", false},
		{"http://[::1]:8000", false},
		{"https://dynamodb.example.com", false},
		{"https://10.0.0.5:8000", false},
		{"https://203.0.113.7", false},
		{"http://10.0.0.5:8000", true},      // private
		{"http://192.168.1.20:8000", true},  // private
		{"http://203.0.113.7:8000", true},   // public
		{"http://[fd00::5]:8000", true},     // private, IPv6
		{"http://[2001:db8::5]:8000", true}, // public, IPv6
		{"http://dynamodb-local:8000", true},
		{"http://dynamodb.us-east-1.aws", true},
		{"HTTP://192.0.2.2:8000", true},
		{"http://user:pass@10.0.0.5:8000", true},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			require.Equal(t, tc.insecure, insecureEndpoint(tc.endpoint))
		})
	}
	require.Equal(t, "AKIA****************", maskKey("AKIAREALLOOKINGKEY42"))
}

// Every source of a DynamoDB endpoint (flag, AWS_ENDPOINT_URL,
// AWS_ENDPOINT_URL_DYNAMODB, a profile's endpoint_url or services section)
// is held to the rule; AWS_ENDPOINT_URL_S3 is not DynamoDB's.
func TestNewClientChecksTheResolvedEndpoint(t *testing.T) {
	endpointtest.Run(t, endpointtest.Suite{Service: "DYNAMODB", Other: "S3", Name: "DynamoDB",
		Build: func(ctx context.Context, flag string, allow bool) (*string, aws.CredentialsProvider, error) {
			client, err := NewClient(ctx, ClientOptions{Endpoint: flag, AllowInsecure: allow})
			if err != nil {
				return nil, nil, err
			}
			return client.Options().BaseEndpoint, client.Options().Credentials, nil
		},
		IsRefusal: func(err error) bool {
			var ie *InsecureEndpointError
			return errors.As(err, &ie)
		},
	})
}

func TestRedactEndpoint(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"https://dynamodb.us-east-1.amazonaws.com/", "https://dynamodb.us-east-1.amazonaws.com/"},
		{"http://admin:hunter2@10.0.0.5:8000", "http://xxxxx@10.0.0.5:8000"},
		{"http://hunter2@10.0.0.5:8000/x", "http://xxxxx@10.0.0.5:8000/x"},
		{"http://ad min:hun ter2@10.0.0.5:8000/x@y", "http://xxxxx@10.0.0.5:8000/x@y"}, // does not parse
		{"the AWS endpoint", "the AWS endpoint"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			require.Equal(t, tc.want, RedactEndpoint(tc.in))
		})
	}
}

// An endpoint's userinfo is printed redacted wherever the sink prints an
// endpoint: the refusal, the retry warning and the unreachable error.
func TestEndpointMessagesRedactUserinfo(t *testing.T) {
	const endpoint = "http://admin:hunter2@10.0.0.5:8000"
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	var logs bytes.Buffer
	r := loggingRetryer{log: slog.New(slog.NewTextHandler(&logs, nil)), endpoint: endpoint, RetryerV2: retry.NewStandard()}
	_, err := r.RetryDelay(1, refused)
	require.NoError(t, err)
	for name, msg := range map[string]string{
		"refusal":     (&InsecureEndpointError{Service: "S3", Endpoint: endpoint, AccessKey: endpointtest.Key}).Error(),
		"retry":       logs.String(),
		"unreachable": (&UnreachableError{Service: "DynamoDB", Endpoint: endpoint, Attempts: 3, Err: refused}).Error(),
	} {
		t.Run(name, func(t *testing.T) {
			require.Contains(t, msg, "http://xxxxx@10.0.0.5:8000")
			require.NotContains(t, msg, "hunter2")
			require.NotContains(t, msg, "admin")
		})
	}
}
