package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// exportFiles reads an export's objects: the manifest and data files by
// name relative to the export's root, and the names under data/.
type exportFiles struct {
	read func(name string) []byte
	list func() []string
}

func dirFiles(t *testing.T, root string) exportFiles {
	return exportFiles{
		read: func(name string) []byte {
			data, err := os.ReadFile(filepath.Join(root, name))
			require.NoError(t, err)
			return data
		},
		list: func() []string {
			ents, err := os.ReadDir(filepath.Join(root, "data"))
			require.NoError(t, err)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			return names
		},
	}
}

func s3Files(t *testing.T, c *s3.Client, bucket, prefix string) exportFiles {
	return exportFiles{
		read: func(name string) []byte {
			data, ok := testenv.S3Get(t, c, bucket, prefix+name)
			require.True(t, ok, name)
			return data
		},
		list: func() []string { return testenv.S3Keys(t, c, bucket, prefix+"data/") },
	}
}

// importEmulator loads an export into a table as ImportTable would: every
// data file the manifest lists, its checksum checked, each line decoded
// from DynamoDB JSON here (not with the export's code) and put, 25 to a
// BatchWriteItem. It returns how many times each item key occurs over the
// files.
func importEmulator(t *testing.T, c *dynamodb.Client, table string, files exportFiles, pk, sk string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	var batch []types.WriteRequest
	inBatch := map[string]bool{}
	flush := func() {
		for len(batch) > 0 {
			out, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: batch}})
			require.NoError(t, err)
			batch = out.UnprocessedItems[table]
		}
		clear(inBatch)
	}
	for _, item := range readExport(t, files) {
		key := testenv.ItemJSON(t, map[string]types.AttributeValue{pk: item[pk], sk: item[sk]})
		seen[key]++
		// A key twice in one request is refused: the second goes in the
		// next (and the count above fails the test).
		if inBatch[key] || len(batch) == 25 {
			flush()
		}
		inBatch[key] = true
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
	}
	flush()
	return seen
}

// readExport decodes every item of the files the manifest lists, checking
// checksums and counts, and that the data prefix holds nothing else.
func readExport(t *testing.T, files exportFiles) []map[string]types.AttributeValue {
	t.Helper()
	var m struct {
		Items int64 `json:"items"`
		Files []struct {
			Name   string `json:"name"`
			Items  int64  `json:"items"`
			SHA256 string `json:"sha256"`
		} `json:"files"`
	}
	require.NoError(t, json.Unmarshal(files.read("manifest.json"), &m))
	require.Len(t, files.list(), len(m.Files), "the data prefix holds exactly the manifest's files")
	var items []map[string]types.AttributeValue
	var total int64
	for _, f := range m.Files {
		raw := files.read("data/" + f.Name)
		sum := sha256.Sum256(raw)
		require.Equal(t, f.SHA256, hex.EncodeToString(sum[:]), f.Name)
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		require.NoError(t, err)
		sc := bufio.NewScanner(zr)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		var n int64
		for sc.Scan() {
			var line struct {
				Item map[string]json.RawMessage `json:"Item"`
			}
			require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
			item := map[string]types.AttributeValue{}
			for k, v := range line.Item {
				item[k] = decodeDDBJSON(t, v)
			}
			items = append(items, item)
			n++
		}
		require.NoError(t, sc.Err())
		require.Equal(t, f.Items, n, f.Name)
		total += n
	}
	require.Equal(t, m.Items, total)
	return items
}

func decodeDDBJSON(t *testing.T, raw json.RawMessage) types.AttributeValue {
	var v map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &v))
	require.Len(t, v, 1, string(raw))
	for typ, body := range v {
		var s string
		var ss []string
		switch typ {
		case "S":
			require.NoError(t, json.Unmarshal(body, &s))
			return &types.AttributeValueMemberS{Value: s}
		case "N":
			require.NoError(t, json.Unmarshal(body, &s))
			return &types.AttributeValueMemberN{Value: s}
		case "B":
			require.NoError(t, json.Unmarshal(body, &s))
			b, err := base64.StdEncoding.DecodeString(s)
			require.NoError(t, err)
			return &types.AttributeValueMemberB{Value: b}
		case "BOOL":
			var b bool
			require.NoError(t, json.Unmarshal(body, &b))
			return &types.AttributeValueMemberBOOL{Value: b}
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: true}
		case "SS":
			require.NoError(t, json.Unmarshal(body, &ss))
			return &types.AttributeValueMemberSS{Value: ss}
		case "NS":
			require.NoError(t, json.Unmarshal(body, &ss))
			return &types.AttributeValueMemberNS{Value: ss}
		case "BS":
			require.NoError(t, json.Unmarshal(body, &ss))
			var bs [][]byte
			for _, e := range ss {
				b, err := base64.StdEncoding.DecodeString(e)
				require.NoError(t, err)
				bs = append(bs, b)
			}
			return &types.AttributeValueMemberBS{Value: bs}
		case "M":
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(body, &m))
			out := map[string]types.AttributeValue{}
			for k, e := range m {
				out[k] = decodeDDBJSON(t, e)
			}
			return &types.AttributeValueMemberM{Value: out}
		case "L":
			var l []json.RawMessage
			require.NoError(t, json.Unmarshal(body, &l))
			out := []types.AttributeValue{}
			for _, e := range l {
				out = append(out, decodeDDBJSON(t, e))
			}
			return &types.AttributeValueMemberL{Value: out}
		}
		t.Fatalf("unknown DynamoDB JSON type %q", typ)
	}
	return nil
}

// exportDest is one kind of export destination for a test: its --to URL
// (plus flags) and how to read it back.
type exportDest struct {
	name  string
	args  []string
	files exportFiles
	// count is how many data files are durable now.
	count func() int
}

func newExportDests(t *testing.T) []exportDest {
	out := filepath.Join(t.TempDir(), "export")
	s3c := testenv.S3Client(t)
	bucket := testenv.NewBucket(t, s3c)
	dir := dirFiles(t, out)
	s3f := s3Files(t, s3c, bucket, "run/")
	return []exportDest{
		{name: "dir", args: []string{"--to", "file://" + out + "/"}, files: dir, count: func() int {
			n := 0
			ents, _ := os.ReadDir(filepath.Join(out, "data"))
			for _, e := range ents {
				if !strings.HasPrefix(e.Name(), ".") {
					n++
				}
			}
			return n
		}},
		{name: "s3", args: []string{"--to", "s3://" + bucket + "/run/", "--s3-endpoint", testenv.S3Endpoint(t)}, files: s3f, count: func() int { return len(s3f.list()) }},
	}
}

// Export the portfolios and alleycat designs from both databases, to a
// directory and to the S3 server, and load the files through the emulator
// into a second table: it holds exactly what migrate writes, every item
// once, and verify passes on it. (The CI tier: portfolios from both, to
// both; alleycat from PostgreSQL to S3.)
func TestExportRoundTripEqualsMigrate(t *testing.T) {
	t.Parallel()
	clitest.RaceBuilt(t)
	designs := []struct{ config, sql string }{
		{"configs/portfolios.yaml", "testdata/portfolios/"},
		{"configs/alleycat.yaml", "testdata/alleycat/"},
	}
	for _, d := range testenv.Drivers() {
		for _, design := range designs {
			t.Run(d.Name+"/"+filepath.Base(design.config), func(t *testing.T) {
				if d.Name == "mysql" && design.config == "configs/alleycat.yaml" {
					// The export is the same code whatever the engine; alleycat's
					// rows from MariaDB are proven by TestAlleycatPatternsAndReassembly.
					testenv.FullTierOnly(t, "alleycat's nests and splits are exported from PostgreSQL in the CI tier")
				}
				tg := newTarget(t, d, design.config, design.sql+d.Name+".sql")
				r := tg.run(t, "", "table", "create")
				require.Equal(t, 0, r.Code, r.Output())
				dir := t.TempDir()
				r = tg.run(t, dir, "migrate", "--progress", "none")
				require.Equal(t, 0, r.Code, r.Output())
				want := testenv.ScanItems(t, tg.client, tg.table)

				for _, dest := range newExportDests(t) {
					if dest.name == "dir" && design.config == "configs/alleycat.yaml" && !testenv.Full() {
						// The CI tier writes alleycat to S3 only: the
						// destinations are the same code whatever the design,
						// and portfolios goes to both.
						continue
					}
					t.Run(dest.name, func(t *testing.T) {
						args := append([]string{"export", "--progress", "none", "--checkpoint", filepath.Join(dir, dest.name+".ckpt")}, dest.args...)
						r := clitest.Run(t, dir, testenv.S3Env(), append(args, tg.flags...)...)
						require.Equal(t, 0, r.Code, r.Output())

						imported := &target{client: tg.client, table: testenv.NewTableName(t), dsn: tg.dsn}
						testenv.DeleteTableOnCleanup(t, tg.client, imported.table)
						imported.flags = []string{"--config", clitest.RepoPath(design.config), "--source-dsn", tg.dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", imported.table}
						r = imported.run(t, "", "table", "create")
						require.Equal(t, 0, r.Code, r.Output())
						seen := importEmulator(t, tg.client, imported.table, dest.files, "PK", "SK")
						for k, n := range seen {
							require.Equal(t, 1, n, "item %s is in the files %d times", k, n)
						}
						require.Equal(t, want, testenv.ScanItems(t, tg.client, imported.table))
						r = imported.run(t, dir, "verify")
						require.Equal(t, 0, r.Code, r.Output())

						// A second export to the same place, under a checkpoint that
						// does not know the first, is refused (with the first's
						// checkpoint it finds the export complete: TestExportRerun).
						other := append([]string{"export", "--progress", "none", "--checkpoint", filepath.Join(dir, dest.name+".other.ckpt")}, dest.args...)
						r = clitest.Run(t, dir, testenv.S3Env(), append(other, tg.flags...)...)
						require.Equal(t, exitUsage, r.Code, r.Output())
						require.Contains(t, r.Stderr, "already holds an export")

						// --restart replaces it: the same items, once, in new files.
						r = clitest.Run(t, dir, testenv.S3Env(), append(append(args, "--restart"), tg.flags...)...)
						require.Equal(t, 0, r.Code, r.Output())
						again := readExport(t, dest.files)
						require.Len(t, again, len(want))
					})
				}
			})
		}
	}
}

// SIGKILL an export twice, each time once the checkpoint counts more
// durable files, then run it to the end: the final files hold every item
// exactly once, with the content the generation rule gives, to a directory
// and to S3. In the CI tier the source answers through a proxy that adds
// 5 ms to every answer, with small pages, so that 30,000 items in about
// six files take long enough to be killed twice; the full tier exports
// 400,000 at full speed.
func TestExportKilledResumesExactlyOnce(t *testing.T) {
	t.Parallel()
	portfolios := testenv.Size(3000, 40000) // ten rows and items each
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			loadScale(t, d.Name, dsn, portfolios)
			pageSize := "500"
			if !testenv.Full() {
				host := dsnHost(t, d.Name, dsn)
				proxy := startProxy(t, host)
				proxy.SetLatency(5 * time.Millisecond)
				dsn = strings.Replace(dsn, host, proxy.Addr(), 1)
				pageSize = "100"
			}
			for _, dest := range newExportDests(t) {
				t.Run(dest.name, func(t *testing.T) {
					dir := t.TempDir()
					args := append([]string{"export", "--progress", "none", "--config", clitest.RepoPath("configs/portfolios.yaml"), "--source-dsn", dsn,
						"--table", "scale", "--file-size", "1048576", "--page-size", pageSize, "--concurrency", "1", "--writers", "1", "--max-in-flight", "5000",
						"--checkpoint-every", "100ms"}, dest.args...)
					// Killed each time the checkpoint counts more durable files
					// than before, so that every run leaves progress behind
					// (and, often, files durable after its last checkpoint).
					ckpt := filepath.Join(dir, ".dynafold", "scale.export.checkpoint.json")
					for kill := 1; kill <= 2; kill++ {
						before := len(readCheckpoint(ckpt).Sink.Files)
						killWhen(t, dir, testenv.S3Env(), func() bool {
							doc := readCheckpoint(ckpt)
							require.False(t, doc.Complete, "the run must not have finished when it is killed")
							return len(doc.Sink.Files) > before
						}, args...)
						t.Logf("killed run %d: %d files durable, %d in the checkpoint", kill, dest.count(), len(readCheckpoint(ckpt).Sink.Files))
					}
					report := filepath.Join(dir, "final.json")
					r := clitest.Run(t, dir, testenv.S3Env(), append(args, "--report", report)...)
					require.Equal(t, 0, r.Code, r.Output())
					rep := readReport(t, report)
					require.True(t, rep.Summary.Resumed, "the last run resumes the killed ones")
					require.Less(t, rep.Summary.Total.RowsRead, int64(10*portfolios), "the last run did not start over")

					want := expectedScaleItems(portfolios)
					got := map[string]int{}
					for _, item := range readExport(t, dest.files) {
						line := testenv.ItemJSON(t, item)
						key := jsonField(line, "PK") + "|" + jsonField(line, "SK")
						got[key]++
						require.Equal(t, want[key], line)
					}
					require.Len(t, got, len(want))
					for k, n := range got {
						require.Equal(t, 1, n, "item %s is in the files %d times", k, n)
					}
				})
			}
		})
	}
}

// on_error and the reject file work for export as for migrate: the bad rows
// of testdata/badrows are rejected into the reject file (exit 5), and the
// files hold exactly the good items.
func TestExportRejectsBadRowsAsMigrate(t *testing.T) {
	t.Parallel()
	good := badRowsGood()
	var want []string
	for _, it := range good {
		want = append(want, badRowsLine(t, it))
	}
	sort.Strings(want)
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/badrows/"+d.Name+".sql"))
			config := clitest.RepoPath("testdata/badrows/mapping.yaml")
			client := testenv.DynamoClient(t)
			table := testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, client, table)
			r := clitest.Run(t, "", nil, "table", "create", "--config", config, "--endpoint", testenv.DynamoEndpoint(t), "--table", table)
			require.Equal(t, 0, r.Code, r.Output())

			dir := t.TempDir()
			out := filepath.Join(dir, "export")
			rejects := filepath.Join(dir, "rejects.jsonl")
			r = clitest.Run(t, dir, nil, "export", "--config", config, "--source-dsn", dsn, "--table", table, "--progress", "none",
				"--to", "file://"+out+"/", "--reject-file", rejects)
			require.Equal(t, exitRejected, r.Code, r.Output())
			require.Contains(t, r.Stderr, fmt.Sprintf("finished with %d rejected and 0 skipped rows", len(badRowsCases)))
			data, err := os.ReadFile(rejects)
			require.NoError(t, err)
			require.Len(t, strings.Split(strings.TrimSpace(string(data)), "\n"), len(badRowsCases))

			importEmulator(t, client, table, dirFiles(t, out), "PK", "SK")
			require.Equal(t, want, badRowsTable(t, testenv.ScanItems(t, client, table)))
		})
	}
}
