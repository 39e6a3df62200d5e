package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// table create gives a new table the mapping's stream (on moto's server,
// which keeps streams), and exits 2 with the command to run for an
// existing table without it, and for an endpoint that keeps no stream
// (dynalite).
func TestTableCreateStream(t *testing.T) {
	t.Parallel()
	const mapping = `
version: 1
source: {driver: postgres, dsn: "postgres://dynafold@127.0.0.1:1/none"}
target:
  table: placeholder
  key: {pk: PK, sk: SK}STREAM
entities:
  p: {from: portfolios, key: {pk: "${id}", sk: P}}
`
	dir := t.TempDir()
	config := func(stream string) string {
		path := filepath.Join(dir, "stream"+strings.TrimSpace(stream)+".yaml")
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(mapping, "STREAM", stream, 1)), 0o644))
		return path
	}
	withStream, without := config("\n  stream: new_and_old_images"), config("")
	create := func(endpoint, table, cfg string) clitest.Result {
		return clitest.Run(t, "", nil, "table", "create", "--config", cfg, "--no-source", "--endpoint", endpoint, "--table", table)
	}

	t.Run("moto", func(t *testing.T) {
		endpoint, c := testenv.MotoEndpoint(t), testenv.MotoClient(t)
		table := testenv.NewTableName(t)
		testenv.DeleteTableOnCleanup(t, c, table)
		r := create(endpoint, table, withStream)
		require.Equal(t, 0, r.Code, r.Output())
		require.Contains(t, r.Stdout, "stream: NEW_AND_OLD_IMAGES")
		d, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		require.NoError(t, err)
		require.EqualValues(t, "NEW_AND_OLD_IMAGES", d.Table.StreamSpecification.StreamViewType)

		plain := testenv.NewTableName(t)
		testenv.DeleteTableOnCleanup(t, c, plain)
		require.Equal(t, 0, create(endpoint, plain, without).Code)
		r = create(endpoint, plain, withStream)
		require.Equal(t, 2, r.Code, r.Output())
		require.Contains(t, r.Stderr, "table "+plain+" has no stream")
		require.Contains(t, r.Stderr, "aws dynamodb update-table --table-name "+plain+" --stream-specification StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES")
		d, err = c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(plain)})
		require.NoError(t, err)
		require.Nil(t, d.Table.StreamSpecification, "the existing table is left as it is")
	})
	t.Run("dynalite", func(t *testing.T) {
		table := testenv.NewTableName(t)
		testenv.DeleteTableOnCleanup(t, testenv.DynamoClient(t), table)
		r := create(testenv.DynamoEndpoint(t), table, withStream)
		require.Equal(t, 2, r.Code, r.Output())
		require.Contains(t, r.Stderr, "this endpoint does not implement DynamoDB Streams")
		require.NotContains(t, r.Output(), "ValidationException")
	})
}
