package sink

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/encoding/httpbinding"
)

// batchSigner signs BatchWriteItem requests with SigV4 as the SDK's
// signer (aws/signer/v4) does, for one request shape: the probe's URL and
// headers, which do not change between requests. The SDK's signer
// rebuilds the canonical request from the header map on every call
// (lower-casing, sorting, trimming, escaping the path, parsing the query),
// which was most of the time it took to get a 25-item request ready to
// send (figures in docs/performance.md). This signer does that once per
// probe and per request only adds what changes
// (date, length, session token) and hashes. TestSignerMatchesTheSDK
// compares its Authorization header with the SDK signer's over bodies,
// times across midnight, session tokens, ports and header spellings; a
// shape it does not cover (a query string in the endpoint) is signed by
// the SDK's signer instead (see DirectSender.request).
type batchSigner struct {
	service, region string
	// host is the Host the request is sent with: the SDK drops a default
	// port (SanitizeHostForHeader).
	host string
	// prefix is the canonical request up to the headers: method, path,
	// query.
	prefix string
	// static are the headers the probe carried that are signed, in
	// canonical form.
	static []canonicalHeader

	mu  sync.Mutex
	key *signingKey
}

type canonicalHeader struct{ name, value string }

// signingKey is the derived key of one secret, day, region and service
// (the secret known by its SHA-256 only: no raw secret outlives the
// request that brought it, as in the SDK's cache, which keeps the access
// key id and the derived key),
// with HMACs keyed by it: a reset HMAC starts from its saved keyed state
// instead of hashing the key pads again.
type signingKey struct {
	secretSum [sha256.Size]byte
	day       string
	key       []byte
	macs      sync.Pool
}

// sum is the HMAC-SHA256 of data under the key, appended to dst.
func (k *signingKey) sum(dst, data []byte) []byte {
	mac, _ := k.macs.Get().(hash.Hash)
	if mac == nil {
		mac = hmac.New(sha256.New, k.key)
	} else {
		mac.Reset()
	}
	mac.Write(data)
	dst = mac.Sum(dst)
	k.macs.Put(mac)
	return dst
}

// Headers the SDK's signer never signs (v4Internal.IgnoredHeaders).
var unsignedHeaders = map[string]bool{"Authorization": true, "User-Agent": true, "X-Amzn-Trace-Id": true, "Expect": true, "Transfer-Encoding": true}

// newBatchSigner prepares the signing of requests to u with headers h
// (without the per-request ones). ok is false for a shape it does not
// cover.
func newBatchSigner(method string, u *url.URL, h http.Header, service, region string) (s *batchSigner, ok bool) {
	if u.Opaque != "" || u.RawQuery != "" || u.User != nil {
		return nil, false
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	s = &batchSigner{service: service, region: region, host: sanitizeHost(u), prefix: method + "\n" + httpbinding.EscapePath(path, false) + "\n" + "\n"}
	values := map[string][]string{}
	for k, v := range h {
		if unsignedHeaders[k] || strings.EqualFold(k, "Content-Length") {
			continue
		}
		lk := strings.ToLower(k)
		if lk == "host" || lk == "x-amz-date" || lk == "x-amz-security-token" {
			return nil, false // set per request; never in a probe's template
		}
		values[lk] = append(values[lk], v...)
	}
	for name, vs := range values {
		clean := make([]string, len(vs))
		for i, v := range vs {
			clean[i] = strings.TrimSpace(stripExcessSpaces(v))
		}
		s.static = append(s.static, canonicalHeader{name, strings.Join(clean, ",")})
	}
	return s, true
}

// sanitizeHost is the host the SDK signs and sends: the URL's, without a
// port that is the scheme's default.
func sanitizeHost(u *url.URL) string {
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return u.Host
	}
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		return host // an IPv6 literal loses its brackets, as in the SDK
	}
	return u.Host
}

// stripExcessSpaces is the SDK signer's: leading and trailing spaces off,
// runs of spaces made one.
func stripExcessSpaces(s string) string {
	s = strings.Trim(s, " ")
	if !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	space := false
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// sign sets req's X-Amz-Date, X-Amz-Security-Token (with session
// credentials), Host and Authorization for a body of length n with
// SHA-256 payloadHash (hex), signed at t.
func (s *batchSigner) sign(req *http.Request, creds aws.Credentials, payloadHash string, n int64, t time.Time) {
	t = t.UTC()
	var dateBuf [16]byte
	amzDate := string(t.AppendFormat(dateBuf[:0], "20060102T150405Z"))
	day := amzDate[:8]
	if s.host != req.URL.Host {
		req.Host = s.host // as the SDK does: only when a default port is dropped
	}
	req.Header["X-Amz-Date"] = []string{amzDate}

	hs := make([]canonicalHeader, 0, len(s.static)+4)
	hs = append(hs, s.static...)
	hs = append(hs, canonicalHeader{"host", s.host}, canonicalHeader{"x-amz-date", amzDate})
	if n > 0 {
		hs = append(hs, canonicalHeader{"content-length", strconv.FormatInt(n, 10)})
	}
	if creds.SessionToken != "" {
		req.Header["X-Amz-Security-Token"] = []string{creds.SessionToken}
		hs = append(hs, canonicalHeader{"x-amz-security-token", strings.TrimSpace(stripExcessSpaces(creds.SessionToken))})
	}
	slices.SortFunc(hs, func(a, b canonicalHeader) int { return strings.Compare(a.name, b.name) })

	canon := make([]byte, 0, 512)
	canon = append(canon, s.prefix...)
	signed := make([]byte, 0, 128)
	for i, h := range hs {
		canon = append(append(append(append(canon, h.name...), ':'), h.value...), '\n')
		if i > 0 {
			signed = append(signed, ';')
		}
		signed = append(signed, h.name...)
	}
	canon = append(append(append(append(canon, '\n'), signed...), '\n'), payloadHash...)
	canonHash := sha256.Sum256(canon)

	scope := day + "/" + s.region + "/" + s.service + "/aws4_request"
	toSign := make([]byte, 0, 160)
	toSign = append(toSign, "AWS4-HMAC-SHA256\n"...)
	toSign = append(append(toSign, amzDate...), '\n')
	toSign = append(append(toSign, scope...), '\n')
	toSign = hex.AppendEncode(toSign, canonHash[:])

	var sum [sha256.Size]byte
	sig := hex.EncodeToString(s.derive(creds.SecretAccessKey, day).sum(sum[:0], toSign))

	req.Header["Authorization"] = []string{"AWS4-HMAC-SHA256 Credential=" + creds.AccessKeyID + "/" + scope +
		", SignedHeaders=" + string(signed) + ", Signature=" + sig}
}

// derive returns the signing key of secret on day, derived once per day
// (and again when the credentials change).
func (s *batchSigner) derive(secret, day string) *signingKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := sha256.Sum256([]byte(secret))
	if s.key != nil && s.key.secretSum == sum && s.key.day == day {
		return s.key
	}
	k := hmacSHA256([]byte("AWS4"+secret), day)
	k = hmacSHA256(k, s.region)
	k = hmacSHA256(k, s.service)
	k = hmacSHA256(k, "aws4_request")
	s.key = &signingKey{secretSum: sum, day: day, key: k}
	return s.key
}

func hmacSHA256(key []byte, data string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(data))
	return mac.Sum(nil)
}
