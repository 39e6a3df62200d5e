package syncfuzz

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
)

// opLog keeps the last statements run, for the report of a failure: the
// seed reproduces the rest.
type opLog struct {
	ring [64]string
	n    int
	// all digests every statement, whole: two runs of one seed must
	// agree on it.
	all hash.Hash
}

// statement records one statement of session id (-1 for the hot row's
// sessions); long literals are cut.
func (l *opLog) statement(id int, stmt string) {
	if l.all == nil {
		l.all = sha256.New()
	}
	fmt.Fprintf(l.all, "%d\x00%s\x00", id, stmt)
	if len(stmt) > 240 {
		stmt = stmt[:200] + fmt.Sprintf("… (%d bytes)", len(stmt))
	}
	l.ring[l.n%len(l.ring)] = fmt.Sprintf("[%d] %s", id, stmt)
	l.n++
}

// last returns the recorded statements, oldest first.
func (l *opLog) last() string {
	var b strings.Builder
	for i := max(0, l.n-len(l.ring)); i < l.n; i++ {
		b.WriteString(l.ring[i%len(l.ring)] + "\n")
	}
	return b.String()
}

// digest is the hash of every statement so far.
func (l *opLog) digest() string {
	if l.all == nil {
		return ""
	}
	return hex.EncodeToString(l.all.Sum(nil))[:16]
}
