// Package connerr tells failures to connect (or broken connections) from
// answers of a server, and says them plainly, for the DynamoDB client and
// the source drivers alike.
package connerr

import (
	"errors"
	"net"
	"net/url"
	"syscall"
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
