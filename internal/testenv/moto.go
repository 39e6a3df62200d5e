package testenv

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// MotoEndpoint returns the URL of moto's server (DYNAFOLD_TEST_MOTO_ENDPOINT,
// started by scripts/services.sh): the second DynamoDB-compatible server,
// for what dynalite lacks (streams, TransactWriteItems, multi-attribute
// GSI keys). It takes about 1,700 writes/s: keep its tests small.
// docs/emulators.md lists where it differs from DynamoDB.
func MotoEndpoint(t testing.TB) string {
	return lookup(t, "DYNAFOLD_TEST_MOTO_ENDPOINT", dialEndpoint)
}

// MotoClient returns a DynamoDB client for moto's server with dummy
// credentials.
func MotoClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	return dynamoClient(t, MotoEndpoint(t))
}

// Emulator is one DynamoDB-compatible server the tests know, for suites
// that run against each.
type Emulator struct {
	Name     string // "dynalite" or "moto"
	Endpoint func(testing.TB) string
}

// Emulators returns dynalite and moto.
func Emulators() []Emulator {
	return []Emulator{{"dynalite", DynamoEndpoint}, {"moto", MotoEndpoint}}
}

// String helps subtest names.
func (e Emulator) String() string { return e.Name }

// Client returns a DynamoDB client for the emulator with dummy
// credentials.
func (e Emulator) Client(t testing.TB) *dynamodb.Client {
	t.Helper()
	return dynamoClient(t, e.Endpoint(t))
}

func dynamoClient(t testing.TB, endpoint string) *dynamodb.Client {
	t.Helper()
	return dynamodb.NewFromConfig(awsConfig(t), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

func awsConfig(t testing.TB) aws.Config {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("dynafold", "dynafold", "")),
	)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// dialEndpoint checks that something listens at the URL's host.
func dialEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}
