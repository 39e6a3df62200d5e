// Package connerr tells failures to connect (or broken connections) from
// answers of a server, and says them plainly, for the DynamoDB client and
// the source drivers alike.
package connerr

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"time"
)

// Is reports whether err is a failure to connect or a broken connection,
// as opposed to an answer from the server.
func Is(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	var ue *url.Error
	return errors.As(err, &op) || errors.As(err, &dns) || (errors.As(err, &ue) && ue.Timeout())
}

// Dial reports whether err is a failure to open a connection at all
// (refused, no route, timed out while connecting), as opposed to a
// connection that broke: the server is not there to be read again.
func Dial(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return (errors.As(err, &op) && op.Op == "dial") || errors.As(err, &dns)
}

// Cause is the plain reason of a connection failure: "connection
// refused", "no such host db.example", "timed out", without the layers of
// wrapping around it.
func Cause(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to host"
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host " + dns.Name
		}
		return "cannot resolve " + dns.Name + ": " + dns.Err
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	case errors.As(err, &op) && op.Err != nil:
		return op.Err.Error()
	}
	return err.Error()
}

// Unreachable is the one sentence for a server that no attempt reached,
// the source's and DynamoDB's alike: "cannot reach DynamoDB at
// http://127.0.0.1:8000: connection refused (5 attempts over 12 s; set
// AWS_MAX_ATTEMPTS=2 to fail faster)". what names the server, at its
// address (without credentials), cause the plain reason (Cause); hint,
// when not empty, says how to fail faster.
func Unreachable(what, at, cause string, attempts int, elapsed time.Duration, hint string) string {
	if hint != "" {
		hint = "; " + hint
	}
	return fmt.Sprintf("cannot reach %s at %s: %s (%d attempts over %.0f s%s)", what, at, cause, attempts, elapsed.Seconds(), hint)
}

// Retrying is the warning for an attempt that did not reach the server,
// said while the next one waits: "cannot reach DynamoDB at …: connection
// refused; retrying in 1s (attempt 2 of 5)". next is the attempt that
// follows, of the most there will be.
func Retrying(what, at, cause string, delay time.Duration, next, of int) string {
	return fmt.Sprintf("cannot reach %s at %s: %s; retrying in %s (attempt %d of %d)", what, at, cause, delay, next, of)
}
