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

// The reference design's table (003), written out by hand from the
// article: every attribute of every item, nothing else.
var portfolioItems = []string{
	`{"DatabaseID":"BobInternalDB","GSI1PK":"2#BobInternalServer","PK":"2","PortfolioID":2,"SK":"DATABASE#bobinternaldb","ServerID":"BobInternalServer","_type":"database"}`,
	`{"DatabaseID":"BobSiteDB","GSI1PK":"2#BobSiteServer","PK":"2","PortfolioID":2,"SK":"DATABASE#bobsitedb","ServerID":"BobSiteServer","_type":"database"}`,
	`{"DatabaseID":"JeffInternalDB","GSI1PK":"1#JeffInternalServer","PK":"1","PortfolioID":1,"SK":"DATABASE#jeffinternaldb","ServerID":"JeffInternalServer","_type":"database"}`,
	`{"DatabaseID":"JeffSiteDB","GSI1PK":"1#JeffSiteServer","PK":"1","PortfolioID":1,"SK":"DATABASE#jeffsitedb","ServerID":"JeffSiteServer","_type":"database"}`,
	`{"GSI1PK":"1#JeffInternalServer","PK":"1","PortfolioID":1,"SK":"SERVER#jeffinternalserver","ServerID":"JeffInternalServer","_type":"server"}`,
	`{"GSI1PK":"1#JeffSiteServer","PK":"1","PortfolioID":1,"SK":"SERVER#jeffsiteserver","ServerID":"JeffSiteServer","_type":"server"}`,
	`{"GSI1PK":"2#BobInternalServer","PK":"2","PortfolioID":2,"SK":"SERVER#bobinternalserver","ServerID":"BobInternalServer","_type":"server"}`,
	`{"GSI1PK":"2#BobSiteServer","PK":"2","PortfolioID":2,"SK":"SERVER#bobsiteserver","ServerID":"BobSiteServer","_type":"server"}`,
	`{"PK":"1","PortfolioID":1,"PortfolioName":"Jeff's Plumbing","SK":"PORTFOLIO","_type":"portfolio"}`,
	`{"PK":"2","PortfolioID":2,"PortfolioName":"Bob's TVs","SK":"PORTFOLIO","_type":"portfolio"}`,
}

// target is a fresh table on the test's DynamoDB endpoint plus the source
// database, with the common flags.
type target struct {
	client *dynamodb.Client
	table  string
	dsn    string
	flags  []string
}

func newTarget(t *testing.T, d testenv.Driver, config string, sqlFiles ...string) *target {
	t.Helper()
	dsn := d.NewDB(t)
	for _, f := range sqlFiles {
		testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath(f))
	}
	tg := &target{client: testenv.DynamoClient(t), table: testenv.NewTableName(t), dsn: dsn}
	testenv.DeleteTableOnCleanup(t, tg.client, tg.table)
	tg.flags = []string{"--config", clitest.RepoPath(config), "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", tg.table}
	return tg
}

func (tg *target) run(t *testing.T, dir string, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(t, dir, nil, append(args, tg.flags...)...)
}

// The portfolio example migrates item for item from both databases,
// through a race-built CLI.
func TestMigratePortfolioExactlyFromBothDatabases(t *testing.T) {
	t.Parallel()
	clitest.RaceBuilt(t)
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
			r := tg.run(t, "", "table", "create")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "created table "+tg.table)

			dir := t.TempDir()
			r = tg.run(t, dir, "migrate", "--progress", "none")
			require.Equal(t, 0, r.Code, r.Output())
			require.Regexp(t, `total\s+10\s+10\s+0\s+0`, r.Stdout)
			require.Equal(t, portfolioItems, testenv.ScanItems(t, tg.client, tg.table))

			// A second run converges to the same table.
			r = tg.run(t, dir, "migrate", "--progress", "none")
			require.Equal(t, 0, r.Code, r.Output())
			require.Equal(t, portfolioItems, testenv.ScanItems(t, tg.client, tg.table))

			// table create again: exists and matches.
			r = tg.run(t, "", "table", "create")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "exists and matches the mapping")

			assertPortfolioQueries(t, tg)
		})
	}
}

func assertPortfolioQueries(t *testing.T, tg *target) {
	t.Helper()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	sks := func(items []map[string]types.AttributeValue) []string {
		var out []string
		for _, it := range items {
			out = append(out, it["SK"].(*types.AttributeValueMemberS).Value)
		}
		return out
	}
	all := testenv.Query(t, tg.client, &dynamodb.QueryInput{
		TableName: aws.String(tg.table), KeyConditionExpression: aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("1")},
	})
	require.Equal(t, []string{"DATABASE#jeffinternaldb", "DATABASE#jeffsitedb", "PORTFOLIO", "SERVER#jeffinternalserver", "SERVER#jeffsiteserver"}, sks(all))

	servers := testenv.Query(t, tg.client, &dynamodb.QueryInput{
		TableName: aws.String(tg.table), KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("1"), ":p": s("SERVER")},
	})
	require.Equal(t, []string{"SERVER#jeffinternalserver", "SERVER#jeffsiteserver"}, sks(servers))

	dbs := testenv.Query(t, tg.client, &dynamodb.QueryInput{
		TableName: aws.String(tg.table), IndexName: aws.String("GSI1"),
		KeyConditionExpression:    aws.String("GSI1PK = :pk AND begins_with(SK, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("1#JeffSiteServer"), ":p": s("DATABASE")},
	})
	require.Equal(t, []string{"DATABASE#jeffsitedb"}, sks(dbs))
	require.Equal(t, s("JeffSiteDB"), dbs[0]["DatabaseID"])
}
