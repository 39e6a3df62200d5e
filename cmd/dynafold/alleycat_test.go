package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// sqlInts runs a query whose columns are all integers and returns the rows.
func sqlInts(t *testing.T, driver, dsn, query string) [][]int64 {
	t.Helper()
	ctx := context.Background()
	var out [][]int64
	scan := func(n int, next func() bool, scanRow func(...any) error) {
		for next() {
			row := make([]int64, n)
			ptrs := make([]any, n)
			for i := range row {
				ptrs[i] = &row[i]
			}
			require.NoError(t, scanRow(ptrs...))
			out = append(out, row)
		}
	}
	switch driver {
	case "postgres":
		conn, err := pgx.Connect(ctx, dsn)
		require.NoError(t, err)
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, query)
		require.NoError(t, err)
		defer rows.Close()
		scan(len(rows.FieldDescriptions()), rows.Next, rows.Scan)
		require.NoError(t, rows.Err())
	default:
		db, err := sql.Open("mysql", dsn)
		require.NoError(t, err)
		defer db.Close()
		rows, err := db.QueryContext(ctx, query)
		require.NoError(t, err)
		defer rows.Close()
		cols, err := rows.Columns()
		require.NoError(t, err)
		scan(len(cols), rows.Next, rows.Scan)
		require.NoError(t, rows.Err())
	}
	return out
}

func numAttr(t *testing.T, av types.AttributeValue) int64 {
	t.Helper()
	n, ok := av.(*types.AttributeValueMemberN)
	require.True(t, ok, "want a Number, got %T", av)
	i, err := strconv.ParseInt(n.Value, 10, 64)
	require.NoError(t, err)
	return i
}

func strAttr(av types.AttributeValue) string {
	if s, ok := av.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// reading is one second of a race as the tests compare it.
type reading struct{ s, c, r, o int64 }

// reassemble rebuilds a racer's readings per race from the items of its
// collection, in query order: a result holds them inline, as a gzip'd JSON
// Binary, or in the #PART# items that follow it.
func reassemble(t *testing.T, items []map[string]types.AttributeValue) map[string][]reading {
	t.Helper()
	out := map[string][]reading{}
	var current string
	add := func(race string, el map[string]any) {
		num := func(k string) int64 {
			switch v := el[k].(type) {
			case json.Number:
				i, _ := v.Int64()
				return i
			case types.AttributeValue:
				return numAttr(t, v)
			}
			t.Fatalf("reading field %s is %T", k, el[k])
			return 0
		}
		out[race] = append(out[race], reading{num("s"), num("c"), num("r"), num("o")})
	}
	for _, it := range items {
		if strAttr(it["_type"]) != "result" {
			continue
		}
		sk := strAttr(it["SK"])
		race, _, isPart := strings.Cut(sk, "#PART#")
		if isPart {
			require.Equal(t, current, race, "parts follow their result")
		} else {
			current = race
			out[race] = []reading{}
		}
		switch r := it["Readings"].(type) {
		case nil:
			require.False(t, isPart, "a part without readings")
		case *types.AttributeValueMemberL:
			for _, e := range r.Value {
				m := map[string]any{}
				for k, v := range e.(*types.AttributeValueMemberM).Value {
					m[k] = v
				}
				add(race, m)
			}
		case *types.AttributeValueMemberB:
			zr, err := gzip.NewReader(bytes.NewReader(r.Value))
			require.NoError(t, err)
			doc, err := io.ReadAll(zr)
			require.NoError(t, err)
			var els []map[string]any
			d := json.NewDecoder(bytes.NewReader(doc))
			d.UseNumber()
			require.NoError(t, d.Decode(&els))
			for _, e := range els {
				add(race, e)
			}
		default:
			t.Fatalf("Readings is %T", r)
		}
	}
	return out
}

func alleycatConfig(t *testing.T, replace ...string) string {
	t.Helper()
	data, err := os.ReadFile(clitest.RepoPath("configs/alleycat.yaml"))
	require.NoError(t, err)
	s := string(data)
	for i := 0; i+1 < len(replace); i += 2 {
		require.Contains(t, s, replace[i])
		s = strings.Replace(s, replace[i], replace[i+1], 1)
	}
	return writeMapping(t, s)
}

// The Alleycat design from both databases: the five access patterns return
// the right items in the right order, and racer 1's second-by-second
// readings reassemble exactly, for the split and the gzip policies.
func TestAlleycatPatternsAndReassembly(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		for _, policy := range []string{"split", "gzip"} {
			t.Run(d.Name+"/"+policy, func(t *testing.T) {
				dsn := d.NewDB(t)
				testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/alleycat/"+d.Name+".sql"))
				// gzip gets a budget the compressed hour (about 18 KB) fits in
				// and the raw one (about 79 KB) does not.
				budget := map[string]string{"split": "14000", "gzip": "20000"}[policy]
				config := alleycatConfig(t, "overflow: split", "overflow: "+policy, "max_bytes: 14000", "max_bytes: "+budget)
				client := testenv.DynamoClient(t)
				table := testenv.NewTableName(t)
				testenv.DeleteTableOnCleanup(t, client, table)
				flags := []string{"--config", config, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
				r := clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...)
				require.Equal(t, 0, r.Code, r.Output())
				r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
				require.Equal(t, 0, r.Code, r.Output())

				q := func(in *dynamodb.QueryInput) []map[string]types.AttributeValue {
					in.TableName = aws.String(table)
					return testenv.Query(t, client, in)
				}
				s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

				// 1 and 5: racer 1's results and readings, per race.
				racer1 := q(&dynamodb.QueryInput{KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :p)"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("racer-1"), ":p": s("race-")}})
				var races []string
				for _, it := range racer1 {
					if _, part := it["Part"]; !part {
						races = append(races, strAttr(it["SK"]))
					}
				}
				want := sqlInts(t, d.Name, dsn, "SELECT race_id FROM race_results WHERE racer_id = 1 ORDER BY race_id")
				var wantRaces []string
				for _, w := range want {
					wantRaces = append(wantRaces, fmt.Sprintf("race-%d", w[0]))
				}
				sort.Strings(wantRaces)
				require.Equal(t, wantRaces, races, "one result per race, in sort-key order")
				got := reassemble(t, racer1)
				for _, w := range want {
					rows := sqlInts(t, d.Name, dsn, fmt.Sprintf(
						"SELECT second, cadence, resistance, output FROM race_readings WHERE racer_id = 1 AND race_id = %d ORDER BY second", w[0]))
					exp := make([]reading, len(rows))
					for i, row := range rows {
						exp[i] = reading{row[0], row[1], row[2], row[3]}
					}
					require.Equal(t, exp, got[fmt.Sprintf("race-%d", w[0])], "readings of race %d", w[0])
				}
				if policy == "gzip" {
					head := racer1[0]
					for _, it := range racer1 {
						if strAttr(it["SK"]) == "race-13" {
							head = it
						}
					}
					require.IsType(t, &types.AttributeValueMemberB{}, head["Readings"], "the hour-long race is compressed")
				}
				if policy == "split" {
					parts := 0
					for _, it := range racer1 {
						if _, part := it["Part"]; part {
							parts++
						}
					}
					require.Greater(t, parts, 1, "the hour-long race 13 was split")
				}

				// 2: races of class 3 through the local index, in Numeric order.
				classRaces := q(&dynamodb.QueryInput{IndexName: aws.String("ByNumeric"), KeyConditionExpression: aws.String("PK = :pk"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("class-3")}})
				var sks []string
				for _, it := range classRaces {
					sks = append(sks, strAttr(it["SK"]))
				}
				var wantSKs []string
				for _, w := range sqlInts(t, d.Name, dsn, "SELECT id FROM races WHERE class_id = 3 ORDER BY id") {
					wantSKs = append(wantSKs, fmt.Sprintf("race-%d", w[0]))
				}
				require.Equal(t, wantSKs, sks)

				// 3: each racer's best output in class 3.
				best := q(&dynamodb.QueryInput{KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :p)"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("class-3"), ":p": s("racer-")}})
				gotBest := map[string]int64{}
				for _, it := range best {
					gotBest[strAttr(it["SK"])] = numAttr(t, it["BestOutput"])
				}
				wantBest := map[string]int64{}
				for _, w := range sqlInts(t, d.Name, dsn, `SELECT rr.racer_id, MAX(rr.total_output) FROM race_results rr
					JOIN races r ON r.id = rr.race_id WHERE r.class_id = 3 GROUP BY rr.racer_id`) {
					wantBest[fmt.Sprintf("racer-%d", w[0])] = w[1]
				}
				require.Equal(t, wantBest, gotBest)

				// 4: race 13's top scores, highest first, through the global index.
				top, err := client.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("BySK"),
					KeyConditionExpression: aws.String("SK = :sk"), ScanIndexForward: aws.Bool(false), Limit: aws.Int32(4),
					ExpressionAttributeValues: map[string]types.AttributeValue{":sk": s("race-13")}})
				require.NoError(t, err)
				var gotTop [][]int64
				for _, it := range top.Items {
					racer, _ := strconv.ParseInt(strings.TrimPrefix(strAttr(it["PK"]), "racer-"), 10, 64)
					gotTop = append(gotTop, []int64{racer, numAttr(t, it["Numeric"])})
				}
				require.Equal(t, sqlInts(t, d.Name, dsn, "SELECT racer_id, total_output FROM race_results WHERE race_id = 13 ORDER BY total_output DESC LIMIT 4"), gotTop)
			})
		}
	}
}

// With overflow: reject and on_error: reject, an aggregate over max_bytes
// goes to the reject file with a reason naming the row; the rest is
// written, and the run exits 5.
func TestAlleycatRejectsOversizedAggregates(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/alleycat/"+d.Name+".sql"))
			config := alleycatConfig(t, "overflow: split", "overflow: reject", "  result:\n    from: race_results", "  result:\n    on_error: reject\n    from: race_results")
			client := testenv.DynamoClient(t)
			table := testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, client, table)
			dir := t.TempDir()
			rejects := filepath.Join(dir, "rejects.jsonl")
			flags := []string{"--config", config, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
			require.Equal(t, 0, clitest.Run(t, dir, nil, append([]string{"table", "create"}, flags...)...).Code)
			r := clitest.Run(t, dir, nil, append([]string{"migrate", "--progress", "none", "--reject-file", rejects}, flags...)...)
			require.Equal(t, exitRejected, r.Code, r.Output())

			long := sqlInts(t, d.Name, dsn, "SELECT rr.race_id, rr.racer_id FROM race_results rr JOIN races r ON r.id = rr.race_id WHERE r.duration_seconds = 3600 ORDER BY 1, 2")
			require.Len(t, long, 8)
			f, err := os.Open(rejects)
			require.NoError(t, err)
			defer f.Close()
			var got [][]int64
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				var rec struct {
					Entity    string           `json:"entity"`
					SourceKey map[string]int64 `json:"source_key"`
					Attribute string           `json:"attribute"`
					Reason    string           `json:"reason"`
				}
				require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
				require.Equal(t, "result", rec.Entity)
				require.Equal(t, "Readings", rec.Attribute)
				require.Regexp(t, `^nested attribute is \d+ bytes, over max_bytes 14000 \(overflow: reject\)$`, rec.Reason)
				got = append(got, []int64{rec.SourceKey["race_id"], rec.SourceKey["racer_id"]})
			}
			sort.Slice(got, func(i, j int) bool { return got[i][0] < got[j][0] || (got[i][0] == got[j][0] && got[i][1] < got[j][1]) })
			require.Equal(t, long, got, "exactly the hour-long results are rejected")
			items := testenv.ScanItems(t, client, table)
			results := 0
			for _, line := range items {
				if strings.Contains(line, `"_type":"result"`) {
					results++
				}
			}
			require.Equal(t, 48, results, "the 48 five-minute results are written")
		})
	}
}
