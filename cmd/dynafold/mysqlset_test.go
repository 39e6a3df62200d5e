package main

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// A MySQL SET column can be stored as a string set (exactly its members;
// the empty set leaves the attribute out, as DynamoDB has no empty sets) or
// as a list (the empty set is an empty list).
func TestMySQLSetColumns(t *testing.T) {
	t.Parallel()
	var d testenv.Driver
	for _, x := range testenv.Drivers() {
		if x.Name == "mysql" {
			d = x
		}
	}
	require.Equal(t, "mysql", d.Name)
	dsn := d.NewDB(t)
	testenv.ExecSQL(t, d.Name, dsn, "CREATE TABLE posts (id int PRIMARY KEY, tags SET('go','sql','aws')); "+
		"INSERT INTO posts VALUES (1, 'go,aws'), (2, ''), (3, NULL), (4, 'sql');")
	cfg := writeMapping(t, `
version: 1
source: {driver: mysql}
target: {table: posts, key: {pk: PK, sk: SK}}
entities:
  post:
    from: posts
    key: {pk: "POST#${id}", sk: "POST"}
    attributes:
      Tags: {from: tags, type: SS}
      TagList: {from: tags, type: L}
      TagText: tags
`)
	client := testenv.DynamoClient(t)
	table := testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, client, table)
	flags := []string{"--config", cfg, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
	r := clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	require.Equal(t, []string{
		`{"PK":"POST#1","SK":"POST","TagList":["go","aws"],"TagText":"go,aws","Tags":["go","aws"]}`,
		`{"PK":"POST#2","SK":"POST","TagList":[],"TagText":""}`,
		`{"PK":"POST#3","SK":"POST"}`,
		`{"PK":"POST#4","SK":"POST","TagList":["sql"],"TagText":"sql","Tags":["sql"]}`,
	}, testenv.ScanItems(t, client, table))
	// The plain JSON above does not tell a set from a list; DynamoDB does.
	out, err := client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "POST#1"}, "SK": &types.AttributeValueMemberS{Value: "POST"},
	}})
	require.NoError(t, err)
	require.IsType(t, &types.AttributeValueMemberSS{}, out.Item["Tags"])
	require.ElementsMatch(t, []string{"go", "aws"}, out.Item["Tags"].(*types.AttributeValueMemberSS).Value)
	require.IsType(t, &types.AttributeValueMemberL{}, out.Item["TagList"])
	require.IsType(t, &types.AttributeValueMemberS{}, out.Item["TagText"], "without a type the SET is its text, as before")
}
