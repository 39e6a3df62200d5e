package redact

import (
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Mask replaces a secret.
const Mask = "xxxxx"

// minKnown is the shortest secret replaced wherever it appears. Real AWS
// credentials are at least 16 characters (an access key id; a secret key
// is 40); the dummies local servers are given ("fuzz", "S3RVER",
// "dynafold") are shorter, and replacing them everywhere would mangle
// table names, paths and messages.
const minKnown = 16

// The shapes of AWS credentials, for those the Redactor was not told of.
var (
	// accessKeyID is a long-term (AKIA) or temporary (ASIA) access key id.
	accessKeyID = regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{16}\b`)
	// sessionToken is an STS session token: base64 whose first bytes are
	// the same for every token of a generation.
	sessionToken = regexp.MustCompile(`(IQoJb3JpZ2lu|AgoJb3JpZ2lu|FwoGZXIvYXdz|FQoGZXIvYXdz|AQoDYXdz)[A-Za-z0-9/+=%]{16,}`)
	// secretKey is 40 characters of base64 after a name that says what
	// they are (a secret key has no prefix of its own to be known by).
	secretKey = regexp.MustCompile(`(?i)((?:aws_?)?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?)[A-Za-z0-9/+]{40}([^A-Za-z0-9/+=]|$)`)
)

// Redactor replaces secrets in text. It is safe for concurrent use:
// secrets can be added while other goroutines print.
type Redactor struct {
	mu    sync.RWMutex
	known []known
}

type known struct{ secret, mask string }

// New returns a Redactor that knows no secret yet; it already replaces
// what is shaped like an AWS credential.
func New() *Redactor { return &Redactor{} }

// AddAWS adds AWS credentials: the access key id is shown by its first
// four characters (AKIA****************, enough to tell which key), the
// secret access key and the session token not at all.
func (r *Redactor) AddAWS(keyID, secretKey, sessionToken string) {
	r.add(keyID, MaskKeyID(keyID))
	r.add(secretKey, Mask)
	r.add(sessionToken, Mask)
}

// AddEnv adds the AWS credentials in the environment, under the names the
// AWS chain reads.
func (r *Redactor) AddEnv(lookup func(string) (string, bool)) {
	get := func(names ...string) string {
		for _, n := range names {
			if v, ok := lookup(n); ok && v != "" {
				return v
			}
		}
		return ""
	}
	r.AddAWS(get("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY"), get("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY"), get("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"))
}

func (r *Redactor) add(secret, mask string) {
	if len(secret) < minKnown {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.known {
		if k.secret == secret {
			return
		}
	}
	// A new slice: String reads the old one without the lock.
	ks := append(slices.Clone(r.known), known{secret, mask})
	// Longest first: a secret that holds another is replaced whole.
	sort.SliceStable(ks, func(i, j int) bool { return len(ks[i].secret) > len(ks[j].secret) })
	r.known = ks
}

// String returns s with every secret replaced.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	r.mu.RLock()
	ks := r.known
	r.mu.RUnlock()
	for _, k := range ks {
		s = Encoded(s, k.secret, k.mask)
	}
	if strings.Contains(s, "KIA") || strings.Contains(s, "SIA") {
		s = accessKeyID.ReplaceAllStringFunc(s, MaskKeyID)
	}
	s = sessionToken.ReplaceAllString(s, Mask)
	return secretKey.ReplaceAllString(s, "${1}"+Mask+"${2}")
}

// MaskKeyID shows the first four characters of an access key id, enough
// to tell which one, not enough to use it.
func MaskKeyID(k string) string {
	if len(k) <= 4 {
		return strings.Repeat("*", len(k))
	}
	return k[:4] + strings.Repeat("*", len(k)-4)
}

// Writer returns w with every Write redacted. Each Write is redacted
// whole, so a secret must not be split across two: the message, line or
// JSON value every printer here writes at once.
func (r *Redactor) Writer(w io.Writer) *Writer { return &Writer{r: r, w: w} }

// Writer is an io.Writer that redacts what it passes on.
type Writer struct {
	r *Redactor
	w io.Writer
}

// Write implements io.Writer; it reports len(p) written when all of the
// redacted text was.
func (w *Writer) Write(p []byte) (int, error) {
	s := w.r.String(string(p))
	if _, err := io.WriteString(w.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Underlying is the writer redacted text goes to, for a caller that asks
// whether it is a terminal.
func (w *Writer) Underlying() io.Writer { return w.w }
