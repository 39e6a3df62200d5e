package ddbnoop

import (
	"encoding/json"
	"hash/crc32"
	"net/http"
	"strconv"
)

// Wire names of the errors this server returns. The SDK keeps only the part
// after '#' as the error code and maps modeled codes (ResourceNotFound...,
// ProvisionedThroughputExceeded..., Throttling...) to typed errors; the
// others (ValidationException, SerializationException,
// UnknownOperationException) surface as smithy.GenericAPIError. The prefixes
// are the ones DynamoDB (and dynalite) use.
const (
	errTypeValidation       = "com.amazon.coral.validate#ValidationException"
	errTypeSerialization    = "com.amazon.coral.service#SerializationException"
	errTypeUnknownOperation = "com.amazon.coral.service#UnknownOperationException"
	errTypeThroughput       = "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"
	errTypeNotFound         = "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException"
	errTypeInUse            = "com.amazonaws.dynamodb.v20120810#ResourceInUseException"
)

// targetPrefix precedes the operation name in the X-Amz-Target header.
const targetPrefix = "DynamoDB_20120810."

// apiError is an error response: HTTP 400 with a JSON {__type, message} body.
type apiError struct {
	Type    string `json:"__type"`
	Message string `json:"message,omitempty"`
}

func (e *apiError) Error() string { return e.Type + ": " + e.Message }

func validationError(msg string) *apiError {
	return &apiError{Type: errTypeValidation, Message: msg}
}

func notFoundError(msg string) *apiError {
	return &apiError{Type: errTypeNotFound, Message: msg}
}

var (
	errMalformed = &apiError{Type: errTypeSerialization, Message: "Start of structure or map found where not expected."}
	errTooMany   = validationError("Too many items requested for the BatchWriteItem call")
	errDuplicate = validationError("Provided list of item keys contains duplicates")
	errItemSize  = validationError("Item size has exceeded the maximum allowed size")
	errKeySchema = validationError("The provided key element does not match the schema")
	errThrottled = &apiError{
		Type: errTypeThroughput,
		Message: "The level of configured provisioned throughput for the table was exceeded. " +
			"Consider increasing your provisioning level with the UpdateTable API.",
	}
)

// Header values are shared, never mutated, slices so that setting them
// allocates nothing per response.
var (
	contentTypeJSON = []string{"application/x-amz-json-1.0"}
	contentTypeText = []string{"application/json"}
)

// writeJSONBody writes a 200 (or other status) response whose body is
// already-encoded JSON, with the X-Amz-Crc32 header DynamoDB sends.
// aws-sdk-go-v2's dynamodb client (v1.73) checks the body against that
// header even when it is absent (as checksum 0) and logs a warning for every
// response, so a server without it both floods the log and costs the client
// time it would not spend against DynamoDB.
func writeJSONBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	h["X-Amz-Crc32"] = []string{strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeJSON encodes v (a control-plane response; not on the hot path).
func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, &apiError{Type: "com.amazonaws.dynamodb.v20120810#InternalServerError", Message: err.Error()})
		return
	}
	writeJSONBody(w, http.StatusOK, body)
}

// writeError writes an API error as HTTP 400, as DynamoDB does for all
// client-side and throttling errors.
func writeError(w http.ResponseWriter, e *apiError) {
	body, _ := json.Marshal(e)
	writeJSONBody(w, http.StatusBadRequest, body)
}

// asAPIError converts a parse error into the response DynamoDB would give.
func asAPIError(err error) *apiError {
	if e, ok := err.(*apiError); ok {
		return e
	}
	return errMalformed
}
