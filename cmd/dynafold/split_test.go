package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/pipeline"
)

// serverItemSize is an item's size as dynalite counts it against the item
// limit (node_modules/dynalite/db/index.js: itemSize and valSize), written
// here independently of dynafold's own count: names and strings by length,
// binary by raw bytes, lists and maps 3 bytes plus 1 per element (plus the
// key for a map), and a number 1 + ceil(d/2) bytes for d significant
// digits, one more when d and the exponent are both even (base-100 digits
// aligned on the decimal point), one more when negative.
func serverItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + serverValueSize(v)
	}
	return n
}

func serverValueSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberB:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return serverNumberSize(x.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + serverValueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + serverValueSize(e)
		}
		return n
	}
	panic(fmt.Sprintf("unexpected attribute type %T", v))
}

func serverNumberSize(s string) int {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, _ = strconv.Atoi(s[i+1:])
		s = s[:i]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	digits := intPart + frac
	// e: the power of ten of the first significant digit.
	e := exp + len(intPart) - 1
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
		e--
	}
	digits = strings.TrimRight(digits, "0")
	d := len(digits)
	if d == 0 {
		return 1
	}
	n := 1 + (d+1)/2
	if d%2 == 0 && e%2 == 0 {
		n++
	}
	if neg {
		n++
	}
	return n
}

func TestServerNumberSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"407.5": 4, "4075": 3, "0.001": 2, "1E+100": 2, "-1": 3, "0": 1, "12": 2, "120": 3, "0.12": 2} {
		require.Equal(t, want, serverNumberSize(in), in)
	}
}

// addLongRace adds race 15, run by racer 1 for 26,000 seconds: one result
// whose readings (about 591 KB) are over the 400 KB item limit.
func addLongRace(t *testing.T, driver, dsn string) {
	t.Helper()
	var sql string
	switch driver {
	case "postgres":
		sql = `INSERT INTO races (id, class_id, started_at, duration_seconds) VALUES (15, 1, '2024-05-01 06:00:00+00', 26000);
INSERT INTO race_results (race_id, racer_id, total_output, avg_cadence, finished_at) VALUES (15, 1, 1, 90.00, '2024-05-01 13:13:20+00');
INSERT INTO race_readings (race_id, racer_id, second, cadence, resistance, output)
  SELECT 15, 1, s, 60 + s % 60, 10 + s % 40, 100 + s % 300 FROM generate_series(1, 26000) AS s;`
	default:
		sql = "INSERT INTO `races` (`id`, `class_id`, `started_at`, `duration_seconds`) VALUES (15, 1, '2024-05-01 06:00:00', 26000);\n" +
			"INSERT INTO `race_results` (`race_id`, `racer_id`, `total_output`, `avg_cadence`, `finished_at`) VALUES (15, 1, 1, 90.00, '2024-05-01 13:13:20');\n" +
			"INSERT INTO `race_readings` (`race_id`, `racer_id`, `second`, `cadence`, `resistance`, `output`)\n" +
			"  SELECT 15, 1, seq, 60 + seq % 60, 10 + seq % 40, 100 + seq % 300 FROM seq_1_to_26000;"
	}
	testenv.ExecSQL(t, driver, dsn, sql)
}

// sourceReadings reads every result's readings from the source, per
// racer and race, in order.
func sourceReadings(t *testing.T, driver, dsn string) map[string]map[string][]reading {
	t.Helper()
	out := map[string]map[string][]reading{}
	for _, row := range sqlInts(t, driver, dsn, "SELECT racer_id, race_id FROM race_results ORDER BY racer_id, race_id") {
		racer := fmt.Sprintf("racer-%d", row[0])
		if out[racer] == nil {
			out[racer] = map[string][]reading{}
		}
		out[racer][fmt.Sprintf("race-%d", row[1])] = []reading{}
	}
	for _, row := range sqlInts(t, driver, dsn, "SELECT racer_id, race_id, second, cadence, resistance, output FROM race_readings ORDER BY racer_id, race_id, second") {
		racer, race := fmt.Sprintf("racer-%d", row[0]), fmt.Sprintf("race-%d", row[1])
		out[racer][race] = append(out[racer][race], reading{row[2], row[3], row[4], row[5]})
	}
	return out
}

// checkAggregates reads every racer's results back and checks, by the
// server's size rule, that no item is over limit, that every head's parts
// are all there, and that the readings reassemble to the source's. It
// returns the number of parts and the largest.
func checkAggregates(t *testing.T, client *dynamodb.Client, table string, want map[string]map[string][]reading, limit int) (parts, largest int) {
	t.Helper()
	for racer, races := range want {
		items := testenv.Query(t, client, &dynamodb.QueryInput{TableName: aws.String(table),
			KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :p)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: racer}, ":p": &types.AttributeValueMemberS{Value: "race-"}}})
		var head map[string]types.AttributeValue
		seen := 0
		checkHead := func() {
			if head != nil {
				if p, ok := head["Parts"]; ok {
					require.EqualValues(t, numAttr(t, p), seen, "%s %s: every part of the head is there", racer, strAttr(head["SK"]))
				}
			}
		}
		for _, it := range items {
			size := serverItemSize(it)
			sk := strAttr(it["SK"])
			if _, isPart := it["Part"]; isPart {
				require.NotNil(t, head, "%s %s: a part without its head", racer, sk)
				seen++
				require.EqualValues(t, seen, numAttr(t, it["Part"]))
				require.Equal(t, fmt.Sprintf("%s#PART#%04d", strAttr(head["SK"]), seen), sk)
				require.LessOrEqual(t, size, limit, "%s %s: the whole part", racer, sk)
				parts++
				largest = max(largest, size)
				continue
			}
			checkHead()
			head, seen = it, 0
			require.LessOrEqual(t, size, 400*1024, "%s %s", racer, sk)
		}
		checkHead()
		got := reassemble(t, items)
		require.Equal(t, races, got, "%s: readings reassemble to the source's, in order", racer)
	}
	return parts, largest
}

// A result with 26,000 readings (about 591 KB) splits under the 400 KB
// item limit with no max_bytes and with max_bytes: 409600, and a small
// max_bytes holds every part, whole, to it: measured here by the server's
// rule, read back from the table, and the readings of every result
// reassemble to the source's in order. plan reports the split.
func TestSplitAggregatesFitTheirLimit(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/alleycat/"+d.Name+".sql"))
			addLongRace(t, d.Name, dsn)
			want := sourceReadings(t, d.Name, dsn)
			require.Len(t, want["racer-1"]["race-15"], 26000)
			for _, c := range []struct {
				name     string
				maxBytes string // "" for none
				limit    int
			}{
				{"no_max_bytes", "", 400*1024 - 4096},
				{"max_bytes_409600", "409600", 400*1024 - 4096},
				{"max_bytes_6000", "6000", 6000},
			} {
				t.Run(c.name, func(t *testing.T) {
					if d.Name == "mysql" && c.maxBytes != "6000" {
						// Splitting is the same code whatever the engine: the
						// CI tier splits MariaDB's rows at the smallest limit,
						// into the most parts.
						testenv.FullTierOnly(t, "the 400 KB limits are split from PostgreSQL's rows in the CI tier")
					}
					line := ""
					if c.maxBytes != "" {
						line = "max_bytes: " + c.maxBytes
					}
					config := alleycatConfig(t, "max_bytes: 14000", line)
					client := testenv.DynamoClient(t)
					table := testenv.NewTableName(t)
					testenv.DeleteTableOnCleanup(t, client, table)
					flags := []string{"--config", config, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}

					r, rep := runPlan(t, append([]string{"--no-target"}, flags...)...)
					require.Equal(t, 0, r.Code, r.Output())
					var split *struct{ items, parts, maxParts, maxPart, limit int64 }
					for _, e := range rep.Entities {
						if e.Entity == "result" {
							require.NotNil(t, e.Split, "plan reports the split")
							split = &struct{ items, parts, maxParts, maxPart, limit int64 }{e.Split.Items, e.Split.Parts, int64(e.Split.MaxParts), int64(e.Split.MaxPartBytes), int64(e.Split.LimitBytes)}
						}
					}
					require.NotNil(t, split)
					require.EqualValues(t, c.limit, split.limit)
					require.LessOrEqual(t, split.maxPart, int64(c.limit))
					require.GreaterOrEqual(t, split.maxParts, int64(2))

					require.Equal(t, 0, clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...).Code)
					r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none", "--output", "json"}, flags...)...)
					require.Equal(t, 0, r.Code, r.Output())
					parts, largest := checkAggregates(t, client, table, want, c.limit)
					require.EqualValues(t, split.parts, parts, "plan counted the parts migrate wrote")
					require.Positive(t, largest)
				})
			}
		})
	}
}

// stressNumbers are numbers whose size the rule "(digits+1)/2 + 1"
// undercounts (407.5 is 04|07|50 in base 100), or that are extreme.
var stressNumbers = []string{
	"407.5", "0.001", "1E+100", "-407.5", "12345678901234567890123456789012345678",
	"-99999999999999999999999999999999999999", "4075", "0.5", "12.25", "-0.001", "1000000", "9.9E-100",
}

// Items whose size by dynafold's count is exactly the 400 KB limit, made of
// numbers that stress the size rule, are written into dynalite without
// refusal: dynafold never counts a number smaller than the server does.
// The same numbers split (no max_bytes) are written too.
func TestNumberSizesAtTheLimit(t *testing.T) {
	t.Parallel()
	// Row 1 is measured and padded to the limit; row 2 is over it even
	// without a pad and splits in two or more parts.
	const children, children2 = 24000, 40000
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			var values []string
			for i := range children {
				values = append(values, fmt.Sprintf("(1, %d, '%s')", i, stressNumbers[i%len(stressNumbers)]))
			}
			for i := range children2 {
				values = append(values, fmt.Sprintf("(2, %d, '%s')", i, stressNumbers[(i*7)%len(stressNumbers)]))
			}
			text := "text"
			if d.Name == "mysql" {
				text = "varchar(64)"
			}
			var sql strings.Builder
			fmt.Fprintf(&sql, "CREATE TABLE agg (id integer PRIMARY KEY, pad %s NOT NULL);\n", map[string]string{"postgres": "text", "mysql": "mediumtext"}[d.Name])
			fmt.Fprintf(&sql, "CREATE TABLE val (agg_id integer NOT NULL, seq integer NOT NULL, v %s NOT NULL, PRIMARY KEY (agg_id, seq));\n", text)
			sql.WriteString("INSERT INTO agg (id, pad) VALUES (1, ''), (2, '');\n")
			for i := 0; i < len(values); i += 4000 {
				fmt.Fprintf(&sql, "INSERT INTO val (agg_id, seq, v) VALUES %s;\n", strings.Join(values[i:min(i+4000, len(values))], ", "))
			}
			testenv.ExecSQL(t, d.Name, dsn, sql.String())
			mapping := func(count, overflow string) string {
				return writeMapping(t, fmt.Sprintf(`version: 1
source: {driver: %s}
target: {table: t, key: {pk: PK, sk: SK}, type_attribute: _type}
entities:
  agg:
    from: agg
    where: "id <= %s"
    key: {pk: "agg-${id}", sk: "agg"}
    attributes: {Pad: pad}
    nest:
      V:
        from: val
        on: {agg_id: id}
        order_by: [seq]
        attributes: {v: {from: v, type: N}}
        overflow: %s
`, d.Name, count, overflow))
			}
			client := testenv.DynamoClient(t)

			// Row 1 alone, unsplit: measure it, then pad it to exactly
			// the limit by dynafold's count.
			exact := mapping("1", "reject")
			table := testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, client, table)
			flags := []string{"--config", exact, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
			_, rep := runPlan(t, append([]string{"--no-target"}, flags...)...)
			size := rep.Entities[0].ItemSize.Max
			require.Less(t, size, int64(400*1024), "24,000 numbers fit an item")
			testenv.ExecSQL(t, d.Name, dsn, fmt.Sprintf("UPDATE agg SET pad = '%s' WHERE id = 1;", strings.Repeat("p", int(400*1024-size))))
			r, rep := runPlan(t, append([]string{"--no-target"}, flags...)...)
			require.Equal(t, 0, r.Code, r.Output())
			require.EqualValues(t, 400*1024, rep.Entities[0].ItemSize.Max, "the item is at dynafold's maximum")
			require.Equal(t, 0, clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...).Code)
			r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
			require.Equal(t, 0, r.Code, "dynalite accepts the item: %s", r.Output())
			got, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: "agg-1"}, "SK": &types.AttributeValueMemberS{Value: "agg"}}})
			require.NoError(t, err)
			require.Len(t, got.Item["V"].(*types.AttributeValueMemberL).Value, children)
			require.LessOrEqual(t, serverItemSize(got.Item), 400*1024)

			// One byte more is refused by dynafold itself, before any write.
			testenv.ExecSQL(t, d.Name, dsn, "UPDATE agg SET pad = CONCAT(pad, 'p') WHERE id = 1;")
			r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none", "--restart"}, flags...)...)
			require.Equal(t, exitFailure, r.Code, r.Output())
			require.Contains(t, r.Output(), "over the 409600-byte item limit (overflow: reject)")

			// Both rows split with no max_bytes (row 1 is now one byte
			// over): every part is written.
			split := mapping("2", "split")
			table = testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, client, table)
			flags = []string{"--config", split, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
			require.Equal(t, 0, clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...).Code)
			r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
			require.Equal(t, 0, r.Code, r.Output())
			for _, id := range []int{1, 2} {
				items := testenv.Query(t, client, &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("PK = :pk"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("agg-%d", id)}}})
				require.GreaterOrEqual(t, len(items), id+1, "agg %d is split", id)
				var vs []string
				for _, it := range items[1:] {
					require.LessOrEqual(t, serverItemSize(it), 400*1024-4096)
					for _, e := range it["V"].(*types.AttributeValueMemberL).Value {
						vs = append(vs, e.(*types.AttributeValueMemberM).Value["v"].(*types.AttributeValueMemberN).Value)
					}
				}
				require.Len(t, vs, map[int]int{1: children, 2: children2}[id])
				require.EqualValues(t, len(items)-1, numAttr(t, items[0]["Parts"]))
			}
		})
	}
}

// startDynalite starts a dynalite of its own whose items are limited to
// kb kilobytes, and returns its endpoint; it is stopped when the test ends.
func startDynalite(t *testing.T, kb int) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if testenv.Integration() {
			t.Fatal("node is needed to start dynalite")
		}
		t.Skip("node not found; set DYNAFOLD_INTEGRATION=1 to require it")
	}
	port := freePort(t)
	cmd := exec.Command(node, clitest.RepoPath("scripts/dynalite.js"), "--port", strconv.Itoa(port), "--maxItemSizeKb", strconv.Itoa(kb))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitListening(t, port)
	return endpoint
}

// A row whose aggregate fails part way (the server refuses some of its
// parts, here a dynalite that takes items of at most 10 KB while the parts
// are up to 14,000 bytes) leaves no head item: the parts it wrote are
// deleted, and every head in the table has all of its parts.
func TestSplitRowFailingMidAggregate(t *testing.T) {
	t.Parallel()
	endpoint := startDynalite(t, 10)
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/alleycat/"+d.Name+".sql"))
			config := alleycatConfig(t, "  result:\n    from: race_results", "  result:\n    on_error: reject\n    from: race_results")
			client := dynamoClientAt(t, endpoint)
			table := testenv.NewTableName(t)
			dir := t.TempDir()
			flags := []string{"--config", config, "--source-dsn", dsn, "--endpoint", endpoint, "--table", table}
			require.Equal(t, 0, clitest.Run(t, dir, nil, append([]string{"table", "create"}, flags...)...).Code)
			r := clitest.Run(t, dir, nil, append([]string{"migrate", "--progress", "none", "--output", "json", "--reject-file", filepath.Join(dir, "rejects.jsonl")}, flags...)...)
			require.Equal(t, exitRejected, r.Code, r.Output())
			var sum pipeline.Summary
			require.NoError(t, json.Unmarshal([]byte(r.Stdout), &sum), r.Output())
			long := sqlInts(t, d.Name, dsn, "SELECT rr.race_id, rr.racer_id FROM race_results rr JOIN races r ON r.id = rr.race_id WHERE r.duration_seconds = 3600")
			// A row is rejected once per refused part: count rows.
			rejected := map[[2]int64]bool{}
			data, err := os.ReadFile(filepath.Join(dir, "rejects.jsonl"))
			require.NoError(t, err)
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var rec pipeline.RejectRecord
				require.NoError(t, json.Unmarshal([]byte(line), &rec))
				var race, racer int64
				require.NoError(t, json.Unmarshal(rec.SourceKey["race_id"], &race))
				require.NoError(t, json.Unmarshal(rec.SourceKey["racer_id"], &racer))
				require.Contains(t, rec.Reason, "Item size has exceeded")
				rejected[[2]int64{race, racer}] = true
			}
			wantRejected := map[[2]int64]bool{}
			for _, rr := range long {
				wantRejected[[2]int64{rr[0], rr[1]}] = true
			}
			require.Equal(t, wantRejected, rejected, "the hour-long results, whose full parts are refused")
			require.Positive(t, sum.SplitPartsRemoved, "the parts written before the failure are deleted")

			heads, parts := 0, 0
			for _, line := range testenv.ScanItems(t, client, table) {
				if strings.Contains(line, `"Part"`) {
					parts++
				}
				if strings.Contains(line, `"Parts"`) {
					heads++
				}
			}
			require.Zero(t, heads, "no head of a failed aggregate")
			require.Zero(t, parts, "no part of a failed aggregate")
			want := sourceReadings(t, d.Name, dsn)
			for _, rr := range long {
				delete(want[fmt.Sprintf("racer-%d", rr[1])], fmt.Sprintf("race-%d", rr[0]))
			}
			checkAggregates(t, client, table, want, 14000)
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitListening waits until something accepts connections on port.
func waitListening(t *testing.T, port int) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for range 600 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}

// dynamoClientAt is testenv.DynamoClient for another endpoint.
func dynamoClientAt(t *testing.T, endpoint string) *dynamodb.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("dynafold", "dynafold", "")))
	require.NoError(t, err)
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

// A max_bytes too small for one reading and a part's own key and
// attributes: plan reports limit.split_part and exits 3.
func TestPlanSplitPartOverLimit(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/alleycat/"+d.Name+".sql"))
			config := alleycatConfig(t, "max_bytes: 14000", "max_bytes: 60")
			r, rep := runPlan(t, "--no-target", "--config", config, "--source-dsn", dsn)
			require.Equal(t, exitPlanData, r.Code, r.Output())
			var found bool
			for _, f := range rep.Findings {
				if f.Check == "limit.split_part" && !strings.Contains(f.Message, "not listed") {
					found = true
					require.Regexp(t, `part \d+ of the split item is \d+ bytes, key and attributes included \(\d+ parts over\)`, f.Message)
					require.Contains(t, f.Message, "parts are held to 60 bytes")
				}
			}
			require.True(t, found, r.Output())
		})
	}
}
