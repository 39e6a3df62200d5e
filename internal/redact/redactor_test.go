package redact

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	keyID   = "AKIAQZTWMKXHRVNS2345"
	secret  = "qZt/WmKx+hRvNs2345ghjkMNPQ/rstvWXZ+6789a"
	token   = "IQoJb3JpZ2luX2VjEqZtWmKxhRvNs/2345+ghjkMNPQrstvWXZ6789=="
	otherID = "ASIAGHJKMNPQRSTVWXZ7"
)

func TestRedactor(t *testing.T) {
	r := New()
	r.AddEnv(func(name string) (string, bool) {
		v, ok := map[string]string{"AWS_ACCESS_KEY_ID": keyID, "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": token}[name]
		return v, ok
	})
	r.AddAWS("fuzz", "S3RVER", "dynafold-local") // too short to be replaced everywhere
	for _, tc := range []struct{ name, in, want string }{
		{"an endpoint's message", "UnrecognizedClientException: The security token included in the request is invalid: " + keyID,
			"UnrecognizedClientException: The security token included in the request is invalid: AKIA****************"},
		{"secret and token", "signed with " + secret + " and " + token, "signed with xxxxx and xxxxx"},
		{"query-escaped", "X-Amz-Security-Token=" + url.QueryEscape(token) + "&X-Amz-Credential=" + url.QueryEscape(keyID+"/20260101"),
			"X-Amz-Security-Token=xxxxx&X-Amz-Credential=AKIA****************%2F20260101"},
		{"json-escaped", `{"message":"` + strings.ReplaceAll(secret, "/", `\/`) + `"}`, `{"message":"xxxxx"}`},
		{"an access key id it was not told of", "invalid key " + otherID + ".", "invalid key ASIA****************."},
		{"a session token it was not told of", "token FwoGZXIvYXdzEBaaGHJKMNPQRSTVWXZ23456789 expired", "token xxxxx expired"},
		{"a secret key it was not told of", `aws_secret_access_key = "ghjkMNPQrstvWXZ2345/ghjkMNPQrstvWXZ2345+"`, `aws_secret_access_key = "xxxxx"`},
		{"SecretAccessKey in JSON", `"SecretAccessKey":"ghjkMNPQrstvWXZ2345/ghjkMNPQrstvWXZ2345+"`, `"SecretAccessKey":"xxxxx"`},
		{"short dummies stay", "table fuzz at S3RVER in .dynafold-local/", "table fuzz at S3RVER in .dynafold-local/"},
		{"a known id anywhere", "X" + keyID + "6", "XAKIA****************6"},
		{"an id it was not told of inside a longer word stays", "X" + otherID + "6", "X" + otherID + "6"},
		{"40 characters without a name stay", "sha1 0123456789abcdef0123456789abcdef01234567", "sha1 0123456789abcdef0123456789abcdef01234567"},
		{"nothing to redact", "created table portfolios", "created table portfolios"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, r.String(tc.in))
		})
	}
}

func TestWriter(t *testing.T) {
	r := New()
	r.AddAWS(keyID, secret, "")
	var out bytes.Buffer
	w := r.Writer(&out)
	p := []byte("key " + keyID + " secret " + secret + "\n")
	n, err := w.Write(p)
	require.NoError(t, err)
	require.Equal(t, len(p), n, "the caller's bytes count as written")
	require.Equal(t, "key AKIA**************** secret xxxxx\n", out.String())
	require.Same(t, &out, w.Underlying())
	var nilR *Redactor
	require.Equal(t, "x "+keyID, nilR.String("x "+keyID), "a nil Redactor passes text on")
}

func TestEncoded(t *testing.T) {
	const pw = "p@ss %+é"
	for _, in := range []string{pw, url.QueryEscape(pw), url.PathEscape(pw), "p%40ss%20%25%2B%C3%A9", "p%40ss+%25%2b%c3%a9", `p@ss \u0025+é`} {
		require.Equal(t, "[xxxxx]", Encoded("["+in+"]", pw, Mask), in)
	}
	require.Equal(t, "p@ss", Encoded("p@ss", pw, Mask), "a part alone is not the secret")
}

// Secrets are added while other goroutines print (a client is built
// mid-run): go test -race finds a Redactor that is not safe for it.
func TestConcurrentAddAndString(t *testing.T) {
	r := New()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 100; i++ {
			// Each longer than the last, so that it sorts first.
			r.AddAWS(fmt.Sprintf("AKIAQZTWMKXHRV%0*d", 6+i, i), secret, "")
		}
	}()
	for i := 0; i < 100; i++ {
		_ = r.String("key AKIAQZTWMKXHRV000001 " + secret)
	}
	<-done
	require.Equal(t, "key AKIA**************** xxxxx", r.String("key AKIAQZTWMKXHRV000001 "+secret))
}
