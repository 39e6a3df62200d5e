package sink

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// errClass is what the writer does about a failed request.
type errClass int

const (
	// classFatal stops the run: the table is missing, access is denied…
	classFatal errClass = iota
	// classThrottle: back off, lower the rate, send again.
	classThrottle
	// classTransient: a 5xx or a broken connection; send again.
	classTransient
	// classInvalid: the request's content is refused; find the item.
	classInvalid
	// classCanceled: the run is stopping.
	classCanceled
)

// Error codes DynamoDB (or a proxy in front of it) uses for throttling,
// also seen untyped when a gateway answers instead of DynamoDB itself.
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
	"Throttling":                             true,
}

// Error codes of server-side failures that a retry can outlive, as seen
// when the SDK cannot map them to a typed error (a 503 from a load
// balancer, for instance).
var transientCodes = map[string]bool{
	"InternalServerError": true,
	"InternalFailure":     true,
	"ServiceUnavailable":  true,
}

// classify sorts an error by its type and API error code, never by message
// text.
func classify(err error) errClass {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return classCanceled
	}
	// The endpoint was waited for already (ReachGuard): retrying the
	// batch would only wait again.
	var ue *UnreachableError
	if errors.As(err, &ue) {
		return classFatal
	}
	// A response garbled on the way: which items were processed is
	// unknown, and puts and deletes can be sent again.
	if errors.Is(err, errChecksum) || errors.Is(err, errAnswerCut) {
		return classTransient
	}
	// Longer than any answer of DynamoDB's: sending again would only
	// read as much again.
	if errors.Is(err, errAnswerTooLarge) {
		return classFatal
	}
	var ptee *types.ProvisionedThroughputExceededException
	var thr *types.ThrottlingException
	var rle *types.RequestLimitExceeded
	if errors.As(err, &ptee) || errors.As(err, &thr) || errors.As(err, &rle) {
		return classThrottle
	}
	var ise *types.InternalServerError
	if errors.As(err, &ise) {
		return classTransient
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch {
		case throttleCodes[api.ErrorCode()]:
			return classThrottle
		case transientCodes[api.ErrorCode()]:
			return classTransient
		case api.ErrorCode() == "ValidationException":
			return classInvalid
		}
	}
	// The SDK's own list: connection resets, timeouts, HTTP 5xx.
	if retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary {
		return classTransient
	}
	return classFatal
}

// Retryable reports whether a failed DynamoDB request may succeed when
// sent again (throttling, server errors, broken connections), for readers
// that retry on their own, such as verify's lookups.
func Retryable(err error) bool {
	c := classify(err)
	return c == classThrottle || c == classTransient
}
