package sink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The hand-written hot path, differential against the SDK under native Go
// fuzzing: the corpus below is the seed, `go test -fuzz` grows it (the
// full tier runs each target for a bounded time), and every input is held
// to what the SDK does with it.

// FuzzSignerMatchesTheSDK: for any endpoint path, header value, secret,
// session token, body and signing time the signer accepts, its headers
// equal the SDK signer's.
func FuzzSignerMatchesTheSDK(f *testing.F) {
	f.Add("/", "application/x-amz-json-1.0", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "", []byte("{}"), int64(1795478398))
	f.Add("/some%20prefix/path", "  a   b  c ", "other", "FwoGZXIvYXdzE  token  ", []byte{}, int64(0))
	f.Add("/a/../b/./c//", "x\ty", "s", "t", []byte("body"), int64(4102444799))
	f.Fuzz(func(t *testing.T, path, value, secret, token string, body []byte, unix int64) {
		// A signer of its own per input: the SDK caches derived keys by
		// access key id and day, not by secret, so a shared one would sign
		// a later input's secret with an earlier one's key.
		sdk := v4.NewSigner()
		u, err := url.Parse("https://dynamodb.eu-west-3.amazonaws.com" + path)
		if err != nil || u.Host != "dynamodb.eu-west-3.amazonaws.com" {
			return
		}
		at := time.Unix(unix%(1<<34), 0).UTC()
		tmpl := http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amz-Target": {"DynamoDB_20120810.BatchWriteItem"}, "X-Custom": {value}}
		bs, ok := newBatchSigner(http.MethodPost, u, tmpl, "dynamodb", "eu-west-3")
		if !ok {
			return // a shape the SDK's signer signs instead
		}
		c := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: secret, SessionToken: token}
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:])
		want, err := http.NewRequest(http.MethodPost, u.String(), nil)
		if err != nil {
			return
		}
		want.Header, want.ContentLength = tmpl.Clone(), int64(len(body))
		if err := sdk.SignHTTP(context.Background(), c, want, hash, "dynamodb", "eu-west-3", at); err != nil {
			return
		}
		got, _ := http.NewRequest(http.MethodPost, u.String(), nil)
		got.Header, got.ContentLength = tmpl.Clone(), int64(len(body))
		bs.sign(got, c, hash, got.ContentLength, at)
		for k := range want.Header {
			if w, g := want.Header.Values(k), got.Header.Values(k); len(w) != len(g) || (len(w) > 0 && w[0] != g[0]) {
				t.Fatalf("header %s: SDK %q, batchSigner %q (path %q, value %q)", k, w, g, path, value)
			}
		}
	})
}

// FuzzParseSuccessAgreesWithTheSDK: every answer body parseSuccess
// accepts, the SDK's deserializer reads to the same output; what it does
// not accept is left to the SDK, which is always safe.
func FuzzParseSuccessAgreesWithTheSDK(f *testing.F) {
	for _, seed := range []string{
		`{"UnprocessedItems":{}}`,
		`{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":25.0}],"UnprocessedItems":{}}`,
		`{"ConsumedCapacity":[{"TableName":"a","CapacityUnits":1},{"TableName":"b","CapacityUnits":2.5e1}],"UnprocessedItems":{}}`,
		`{"UnprocessedItems":{"t":[{"PutRequest":{"Item":{"PK":{"S":"a"}}}}]}}`,
		" {\n \"UnprocessedItems\" : { } ,\t\"ConsumedCapacity\" : [ { \"TableName\" : \"t\" , \"CapacityUnits\" : -0 } ] }\r\n",
		`{"ConsumedCapacity":[{"TableName":"t\u0041","CapacityUnits":1E+2}]}`,
	} {
		f.Add([]byte(seed))
	}
	s := NewDirectSender(localClient("http://127.0.0.1:1"))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := parseSuccess(body)
		if !ok {
			return
		}
		want, err := sdkParse(t, s, string(body))
		if err != nil {
			t.Fatalf("parseSuccess accepted %q, which the SDK refuses: %v", body, err)
		}
		if !reflect.DeepEqual(want.UnprocessedItems, got.UnprocessedItems) || !reflect.DeepEqual(want.ConsumedCapacity, got.ConsumedCapacity) ||
			!reflect.DeepEqual(want.ItemCollectionMetrics, got.ItemCollectionMetrics) {
			t.Fatalf("%q: SDK %+v, parseSuccess %+v", body, want, got)
		}
	})
}
