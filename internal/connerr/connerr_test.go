package connerr

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The source's and DynamoDB's "cannot reach" sentences are this one.
func TestUnreachable(t *testing.T) {
	for name, tc := range map[string]struct {
		hint, want string
	}{
		"hint":    {"set AWS_MAX_ATTEMPTS=2 to fail faster", "cannot reach DynamoDB at http://127.0.0.1:1: connection refused (5 attempts over 12 s; set AWS_MAX_ATTEMPTS=2 to fail faster)"},
		"no hint": {"", "cannot reach DynamoDB at http://127.0.0.1:1: connection refused (5 attempts over 12 s)"},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, Unreachable("DynamoDB", "http://127.0.0.1:1", "connection refused", 5, 12300*time.Millisecond, tc.hint))
		})
	}
	require.Equal(t, "cannot reach PostgreSQL at 127.0.0.1:1/app: connection refused; retrying in 1s (attempt 2 of 5)",
		Retrying("PostgreSQL", "127.0.0.1:1/app", "connection refused", time.Second, 2, 5))
}
