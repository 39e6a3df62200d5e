package export

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/dynafold/dynafold/internal/endpointtest"
	"github.com/dynafold/dynafold/sink"
)

// The S3 client is held to the DynamoDB client's rule, on the endpoint it
// resolved from any source (--s3-endpoint, AWS_ENDPOINT_URL_S3,
// AWS_ENDPOINT_URL, a profile's endpoint_url or services section); the
// suite is sink's TestNewClientChecksTheResolvedEndpoint's.
func TestS3ClientChecksTheResolvedEndpoint(t *testing.T) {
	endpointtest.Run(t, endpointtest.Suite{Service: "S3", Other: "DYNAMODB", Name: "S3",
		Build: func(ctx context.Context, flag string, allow bool) (*string, aws.CredentialsProvider, error) {
			client, err := NewS3Client(ctx, S3ClientOptions{Endpoint: flag, AllowInsecure: allow})
			if err != nil {
				return nil, nil, err
			}
			return client.Options().BaseEndpoint, client.Options().Credentials, nil
		},
		IsRefusal: func(err error) bool {
			var ie *sink.InsecureEndpointError
			return errors.As(err, &ie)
		},
	})
}
