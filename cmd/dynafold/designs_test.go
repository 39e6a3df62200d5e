package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
)

// design is one reference design migrated into a fresh table.
type design struct {
	*target
	driver string
	dir    string
}

func newDesign(t *testing.T, d testenv.Driver, name string) *design {
	t.Helper()
	tg := newTarget(t, d, "configs/"+name+".yaml", "testdata/"+name+"/"+d.Name+".sql")
	ds := &design{target: tg, driver: d.Name, dir: t.TempDir()}
	r := tg.run(t, ds.dir, "table", "create")
	require.Equal(t, 0, r.Code, r.Output())
	return ds
}

func (ds *design) migrate(t *testing.T, extra ...string) {
	t.Helper()
	r := ds.run(t, ds.dir, append([]string{"migrate", "--progress", "none"}, extra...)...)
	require.Equal(t, 0, r.Code, r.Output())
}

// patternsHold runs `dynafold patterns` and requires every pattern to hold.
func (ds *design) patternsHold(t *testing.T) {
	t.Helper()
	r := ds.run(t, ds.dir, "patterns", "--output", "json")
	require.Equal(t, 0, r.Code, r.Output())
	var rep struct {
		Passed   int `json:"passed"`
		Failed   int `json:"failed"`
		Patterns []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"patterns"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Stdout)
	require.Zero(t, rep.Failed)
	require.NotZero(t, rep.Passed)
}

func (ds *design) query(t *testing.T, in *dynamodb.QueryInput) []map[string]types.AttributeValue {
	t.Helper()
	in.TableName = aws.String(ds.table)
	return testenv.Query(t, ds.client, in)
}

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func TestDesignTelemetryHub(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ds := newDesign(t, d, "telemetryhub")
			ds.migrate(t)
			ds.patternsHold(t)
			// Users of service group 1 through the inverted index are exactly
			// the source's memberships.
			got := ds.query(t, &dynamodb.QueryInput{IndexName: aws.String("Inverted"),
				KeyConditionExpression:    aws.String("SK = :sg AND begins_with(PK, :u)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":sg": sv("servicegroup:1"), ":u": sv("user:")}})
			var users []string
			for _, it := range got {
				users = append(users, strAttr(it["PK"]))
			}
			var want []string
			for _, row := range sqlInts(t, ds.driver, ds.dsn, "SELECT user_id FROM user_service_groups WHERE service_group_id = 1") {
				want = append(want, fmt.Sprintf("user:%d", row[0]))
			}
			require.ElementsMatch(t, want, users)
		})
	}
}

func TestDesignDuda(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ds := newDesign(t, d, "duda")
			out, err := ds.client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(ds.table)})
			require.NoError(t, err)
			require.Len(t, out.Table.LocalSecondaryIndexes, 1, "table create made the LSI")
			require.Equal(t, "ByEmail", *out.Table.LocalSecondaryIndexes[0].IndexName)
			ds.migrate(t)
			ds.patternsHold(t)
			// The member found by email is the source's member with that email.
			got := ds.query(t, &dynamodb.QueryInput{IndexName: aws.String("ByEmail"),
				KeyConditionExpression:    aws.String("PK = :site AND Email = :e"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":site": sv("SITE#diegos-salon"), ":e": sv("ahmed.haddad51@hotmail.co.uk")}})
			require.Len(t, got, 1)
			require.Equal(t, "member", strAttr(got[0]["_type"]))
			require.True(t, strings.HasPrefix(strAttr(got[0]["SK"]), "MEMBER#"))
			// Restricted pages arrive as a list from both engines' types
			// (PostgreSQL text[], MySQL JSON).
			meta := ds.query(t, &dynamodb.QueryInput{KeyConditionExpression: aws.String("PK = :site AND SK = :m"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":site": sv("SITE#diegos-salon"), ":m": sv("METADATA#")}})
			require.Len(t, meta, 1)
			require.IsType(t, &types.AttributeValueMemberL{}, meta[0]["RestrictedPages"])
			require.IsType(t, &types.AttributeValueMemberBOOL{}, meta[0]["Enabled"])
		})
	}
}

func TestDesignCart(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ds := newDesign(t, d, "cart")
			ds.migrate(t)
			ds.patternsHold(t)
			active := ds.query(t, &dynamodb.QueryInput{KeyConditionExpression: aws.String("PK = :u AND begins_with(SK, :a)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":u": sv("USER#5"), ":a": sv("CART#ACTIVE#")}})
			want := sqlInts(t, ds.driver, ds.dsn, "SELECT item_id FROM cart_items WHERE user_id = 5 AND status = 'ACTIVE' ORDER BY item_id")
			require.Len(t, active, len(want))
			for i, row := range want {
				require.Equal(t, fmt.Sprintf("CART#ACTIVE#%06d", row[0]), strAttr(active[i]["SK"]), "padded ids sort numerically")
			}
		})
	}
}

// One tenant at a time: a run with --var tenant=N reads and writes exactly
// that tenant, leaves the others untouched, and verify and diff scope to it.
func TestDesignPhotosOneTenantAtATime(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ds := newDesign(t, d, "photos")
			ds.migrate(t, "--var", "tenant=3", "--checkpoint", "t3.json")
			tenant3 := testenv.ScanItems(t, ds.client, ds.table)
			require.Len(t, tenant3, int(sqlInts(t, ds.driver, ds.dsn, "SELECT COUNT(*) FROM photos WHERE user_id = 3")[0][0]))
			for _, line := range tenant3 {
				require.Contains(t, line, `"PK":"USER#3"`)
			}

			ds.migrate(t, "--var", "tenant=7", "--checkpoint", "t7.json")
			ds.patternsHold(t)
			all := testenv.ScanItems(t, ds.client, ds.table)
			var others, seven []string
			for _, line := range all {
				if strings.Contains(line, `"PK":"USER#7"`) {
					seven = append(seven, line)
				} else {
					others = append(others, line)
				}
			}
			require.Len(t, seven, 25)
			require.Equal(t, tenant3, others, "tenant 3's items are untouched by tenant 7's run, and no other tenant appears")

			// verify and diff read only the tenant they are given.
			for _, tenant := range []string{"3", "7"} {
				for _, cmd := range []string{"verify", "diff"} {
					r := ds.run(t, ds.dir, cmd, "--var", "tenant="+tenant, "--output", "json")
					require.Equal(t, 0, r.Code, r.Output())
					var rep struct {
						Totals struct {
							Rows int64 `json:"rows_seen"`
						} `json:"totals"`
					}
					require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Stdout)
					want := sqlInts(t, ds.driver, ds.dsn, "SELECT COUNT(*) FROM photos WHERE user_id = "+tenant)[0][0]
					require.Equal(t, want, rep.Totals.Rows, "%s --var tenant=%s reads only that tenant", cmd, tenant)
				}
			}
			// Without a tenant the filter has no value: a usage error, before
			// anything is read.
			r := ds.run(t, ds.dir, "migrate", "--progress", "none")
			require.Equal(t, exitUsage, r.Code, r.Output())
			require.Contains(t, r.Stderr, "uses ${var.tenant} but it has no value; pass --var tenant=VALUE")
		})
	}
}

// The sparse index holds exactly the escalated reports.
func TestDesignDevicesSparseIndex(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ds := newDesign(t, d, "devices")
			ds.migrate(t)
			ds.patternsHold(t)
			var inIndex int
			var start map[string]types.AttributeValue
			for {
				out, err := ds.client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(ds.table), IndexName: aws.String("Escalations"), ExclusiveStartKey: start})
				require.NoError(t, err)
				inIndex += len(out.Items)
				if len(out.LastEvaluatedKey) == 0 {
					break
				}
				start = out.LastEvaluatedKey
			}
			escalated := sqlInts(t, ds.driver, ds.dsn, "SELECT COUNT(*) FROM device_reports WHERE escalated_to IS NOT NULL")[0][0]
			require.EqualValues(t, escalated, inIndex, "the index holds only the escalated reports")
			// Newest first.
			got := ds.query(t, &dynamodb.QueryInput{IndexName: aws.String("Escalations"), ScanIndexForward: aws.Bool(false),
				KeyConditionExpression:    aws.String("EscalatedTo = :t"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":t": sv("tech-alice")}})
			for i := 1; i < len(got); i++ {
				require.Greater(t, strAttr(got[i-1]["SK"]), strAttr(got[i]["SK"]))
			}
		})
	}
}

// ExpiresAt is created_at plus seven days, as epoch seconds; dynalite does
// not implement TTL updates and table create says so.
func TestDesignMessagesTTL(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			tg := newTarget(t, d, "configs/messages.yaml", "testdata/messages/"+d.Name+".sql")
			r := tg.run(t, "", "table", "create")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "TTL: unsupported by this endpoint")
			require.Contains(t, r.Stdout, "items still carry ExpiresAt")
			r = tg.run(t, "", "migrate", "--progress", "none")
			require.Equal(t, 0, r.Code, r.Output())
			epoch := "EXTRACT(EPOCH FROM created_at)::bigint"
			if d.Name == "mysql" {
				// DATETIME has no zone; dynafold reads it as UTC.
				epoch = "TIMESTAMPDIFF(SECOND, '1970-01-01 00:00:00', created_at)"
			}
			want := map[string]int64{}
			for _, row := range sqlInts(t, d.Name, tg.dsn, "SELECT id, "+epoch+" FROM messages") {
				want[strconv.FormatInt(row[0], 10)] = row[1] + 7*24*3600
			}
			items := testenv.ScanItems(t, tg.client, tg.table)
			require.Len(t, items, len(want))
			for _, line := range items {
				var it struct {
					SK        string      `json:"SK"`
					ExpiresAt json.Number `json:"ExpiresAt"`
				}
				require.NoError(t, json.Unmarshal([]byte(line), &it))
				id := it.SK[strings.LastIndexByte(it.SK, '#')+1:]
				got, err := it.ExpiresAt.Int64()
				require.NoError(t, err)
				require.Equal(t, want[id], got, "message %s", id)
			}
		})
	}
}

func TestDesignProductsVerticalPartitioning(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ds := newDesign(t, d, "products")
			ds.migrate(t)
			ds.patternsHold(t)
			items := testenv.ScanItems(t, ds.client, ds.table)
			require.Len(t, items, 3*int(sqlInts(t, ds.driver, ds.dsn, "SELECT COUNT(*) FROM products")[0][0]))
			pricing := ds.query(t, &dynamodb.QueryInput{KeyConditionExpression: aws.String("PK = :p AND SK = :s"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": sv("PRODUCT#1"), ":s": sv("PRICING")}})
			require.Len(t, pricing, 1)
			require.Contains(t, pricing[0], "Price")
			require.NotContains(t, pricing[0], "Description", "each item has only its own attributes")
		})
	}
}

// Sharded keys read back across all shards give every vote exactly once,
// and a rerun writes the same keys.
func TestDesignVotesWriteSharding(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ds := newDesign(t, d, "votes")
			ds.migrate(t)
			ds.patternsHold(t)
			first := testenv.ScanItems(t, ds.client, ds.table)
			var got []string
			shards := map[string]bool{}
			for s := 0; s < 10; s++ {
				pk := fmt.Sprintf("CONTESTANT#3#%d", s)
				for _, it := range ds.query(t, &dynamodb.QueryInput{KeyConditionExpression: aws.String("PK = :p"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":p": sv(pk)}}) {
					got = append(got, strings.TrimLeft(strings.TrimPrefix(strAttr(it["SK"]), "VOTE#"), "0"))
					shards[pk] = true
				}
			}
			var want []string
			for _, row := range sqlInts(t, ds.driver, ds.dsn, "SELECT id FROM votes WHERE contestant_id = 3") {
				want = append(want, strconv.FormatInt(row[0], 10))
			}
			sort.Strings(got)
			sort.Strings(want)
			require.Equal(t, want, got, "every vote once")
			require.Greater(t, len(shards), 5, "votes spread over the shards")
			ds.migrate(t, "--restart")
			require.Equal(t, first, testenv.ScanItems(t, ds.client, ds.table), "a rerun writes the same keys")
		})
	}
}

// The Northwind-shaped shop of issue 40's trial (testdata/shop) loads and
// migrates from both engines with its access patterns holding, and plan
// ends with no warning: the self-reference the top manager leaves NULL is
// marked sparse: true and stated as a note.
func TestDesignShop(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t, d, "testdata/shop/shop.yaml", "testdata/shop/"+d.Name+".sql")
			ds := &design{target: tg, driver: d.Name, dir: t.TempDir()}
			r := ds.run(t, ds.dir, "plan", "--no-target")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "\nno errors (0 errors, 0 warnings, ")
			require.Contains(t, r.Stdout, "1 item left out of index GSI1 on purpose (sparse: true), e.g. row employee_id=2")
			r = ds.run(t, ds.dir, "table", "create")
			require.Equal(t, 0, r.Code, r.Output())
			ds.migrate(t)
			ds.patternsHold(t)
			unshipped := ds.query(t, &dynamodb.QueryInput{IndexName: aws.String("Unshipped"),
				KeyConditionExpression:    aws.String("UnshippedPK = :u"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":u": sv("UNSHIPPED")}})
			require.EqualValues(t, sqlInts(t, ds.driver, ds.dsn, "SELECT COUNT(*) FROM orders WHERE shipped_date IS NULL")[0][0], len(unshipped))
		})
	}
}
