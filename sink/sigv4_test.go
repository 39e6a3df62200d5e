package sink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/stretchr/testify/require"
)

// TestSignerMatchesTheSDK: batchSigner's Authorization (and the headers
// it sets) equal the SDK signer's for the same request, over endpoints
// with and without ports, header values with odd spacing, session
// tokens, body lengths including zero, and signing times across midnight
// and across days with one signer, so that its cached key is renewed.
func TestSignerMatchesTheSDK(t *testing.T) {
	endpoints := []string{
		"https://dynamodb.eu-west-3.amazonaws.com/",
		"https://dynamodb.us-east-1.amazonaws.com:443/",
		"http://127.0.0.1:58000",
		"http://localhost:80/",
		"http://[::1]:8000/",
		"https://[::1]:443/",
		"http://localhost:8000/some%20prefix/path",
	}
	templates := []http.Header{
		{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amz-Target": {"DynamoDB_20120810.BatchWriteItem"}, "Accept-Encoding": {"identity"},
			"User-Agent": {"aws-sdk-go-v2/1.47.8 ua/2.1 os/linux lang/go#1.26.8 api/dynamodb#1.73.1 m/e"}},
		{"Content-Type": {"  application/x-amz-json-1.0  "}, "X-Amz-Target": {"DynamoDB_20120810.BatchWriteItem"}, "X-Custom": {"a   b  c", " d "}, "X-Amzn-Trace-Id": {"Root=1"}},
	}
	creds := []aws.Credentials{
		{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"},
		{AccessKeyID: "ASIAEXAMPLE", SecretAccessKey: "other", SessionToken: "FwoGZXIvYXdzE  token  "},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sdk := v4.NewSigner()
	start := time.Date(2026, 11, 23, 23, 59, 58, 0, time.UTC)
	for _, ep := range endpoints {
		for ti, tmpl := range templates {
			u, err := url.Parse(ep)
			require.NoError(t, err)
			bs, ok := newBatchSigner(http.MethodPost, u, tmpl, "dynamodb", "eu-west-3")
			require.True(t, ok)
			for i := range 12 {
				c := creds[i%len(creds)]
				at := start.Add(time.Duration(i) * 7 * time.Hour / 12) // crosses midnight and a day
				body := make([]byte, rng.IntN(3)*rng.IntN(5000))
				for j := range body {
					body[j] = byte(rng.Uint32())
				}
				sum := sha256.Sum256(body)
				hash := hex.EncodeToString(sum[:])
				name := fmt.Sprintf("%s/template%d/%d", ep, ti, i)

				want, err := http.NewRequest(http.MethodPost, ep, nil)
				require.NoError(t, err)
				want.Header, want.ContentLength = tmpl.Clone(), int64(len(body))
				require.NoError(t, sdk.SignHTTP(context.Background(), c, want, hash, "dynamodb", "eu-west-3", at), name)

				got, err := http.NewRequest(http.MethodPost, ep, nil)
				require.NoError(t, err)
				got.Header, got.ContentLength = tmpl.Clone(), int64(len(body))
				bs.sign(got, c, hash, got.ContentLength, at)

				require.Equal(t, want.Header, got.Header, name)
				require.Equal(t, want.Host, got.Host, name)
			}
		}
	}
}

// TestSignerRefusesShapesItDoesNotCover: an endpoint with a query string
// is signed by the SDK's signer instead.
func TestSignerRefusesShapesItDoesNotCover(t *testing.T) {
	u, err := url.Parse("https://example.com/?a=b")
	require.NoError(t, err)
	_, ok := newBatchSigner(http.MethodPost, u, http.Header{}, "dynamodb", "us-east-1")
	require.False(t, ok)
}

// BenchmarkSign: preparing the signature of one 25-item request, the SDK's
// signer against batchSigner (the payload hash excluded: both need it).
func BenchmarkSign(b *testing.B) {
	body := appendBatch(nil, "t", benchBatch())
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	creds := aws.Credentials{AccessKeyID: "k", SecretAccessKey: "s"}
	tmpl := http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amz-Target": {"DynamoDB_20120810.BatchWriteItem"}, "Accept-Encoding": {"identity"}}
	u, _ := url.Parse("http://127.0.0.1:8000/")
	b.Run("sdk", func(b *testing.B) {
		s := v4.NewSigner()
		b.ReportAllocs()
		for b.Loop() {
			req := &http.Request{Method: http.MethodPost, URL: u, Header: tmpl.Clone(), ContentLength: int64(len(body))}
			_ = s.SignHTTP(context.Background(), creds, req, hash, "dynamodb", "us-east-1", time.Now())
		}
	})
	b.Run("batchSigner", func(b *testing.B) {
		s, _ := newBatchSigner(http.MethodPost, u, tmpl, "dynamodb", "us-east-1")
		b.ReportAllocs()
		for b.Loop() {
			req := &http.Request{Method: http.MethodPost, URL: u, Header: tmpl.Clone(), ContentLength: int64(len(body))}
			s.sign(req, creds, hash, req.ContentLength, time.Now())
		}
	})
}

// BenchmarkPayloadHash: the SHA-256 of one 25-item request body, which
// SigV4 needs for every request (DirectSender.request); MB/s shows whether
// the machine hashes with SHA instructions.
func BenchmarkPayloadHash(b *testing.B) {
	body := appendBatch(nil, "t", benchBatch())
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		_ = sha256.Sum256(body)
	}
}

// TestSignerHoldsNoRawSecret: the signer's cached key is known by the
// secret's digest, never the secret; a new secret under the same access
// key id and day is derived again (the SDK's own cache, keyed by access
// key id and day, would keep signing with the old one).
func TestSignerHoldsNoRawSecret(t *testing.T) {
	u, err := url.Parse("https://dynamodb.eu-west-3.amazonaws.com/")
	require.NoError(t, err)
	tmpl := http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amz-Target": {"DynamoDB_20120810.BatchWriteItem"}}
	bs, ok := newBatchSigner(http.MethodPost, u, tmpl, "dynamodb", "eu-west-3")
	require.True(t, ok)
	at := time.Date(2026, 11, 27, 1, 2, 3, 0, time.UTC)
	hash := hex.EncodeToString(make([]byte, 32))
	for _, secret := range []string{"first-distinctive-secret", "second-distinctive-secret"} {
		c := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: secret}
		got, _ := http.NewRequest(http.MethodPost, u.String(), nil)
		got.Header = tmpl.Clone()
		bs.sign(got, c, hash, 0, at)
		want, _ := http.NewRequest(http.MethodPost, u.String(), nil)
		want.Header = tmpl.Clone()
		require.NoError(t, v4.NewSigner().SignHTTP(context.Background(), c, want, hash, "dynamodb", "eu-west-3", at))
		require.Equal(t, want.Header.Get("Authorization"), got.Header.Get("Authorization"))
		require.NotContains(t, fmt.Sprintf("%+v %+v", bs, bs.key), secret)
	}
}
