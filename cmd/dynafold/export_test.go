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
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// importEmulator loads an export into a table as ImportTable would: every
// data file the manifest lists, its checksum checked, each line decoded
// from DynamoDB JSON here (not with the export's code) and put. It returns
// how many times each item key occurs over the files.
func importEmulator(t *testing.T, c *dynamodb.Client, table, root string, pk, sk string) map[string]int {
	t.Helper()
	var m struct {
		Items int64 `json:"items"`
		Files []struct {
			Name   string `json:"name"`
			Items  int64  `json:"items"`
			SHA256 string `json:"sha256"`
		} `json:"files"`
	}
	data, err := os.ReadFile(filepath.Join(root, "manifest.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &m))
	ents, err := os.ReadDir(filepath.Join(root, "data"))
	require.NoError(t, err)
	require.Len(t, ents, len(m.Files), "the data directory holds exactly the manifest's files")
	seen := map[string]int{}
	var total int64
	for _, f := range m.Files {
		raw, err := os.ReadFile(filepath.Join(root, "data", f.Name))
		require.NoError(t, err)
		sum := sha256.Sum256(raw)
		require.Equal(t, f.SHA256, hex.EncodeToString(sum[:]), f.Name)
		zr, err := gzip.NewReader(bytesReader(raw))
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
			key := testenv.ItemJSON(t, map[string]types.AttributeValue{pk: item[pk], sk: item[sk]})
			seen[key]++
			_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
			require.NoError(t, err)
			n++
		}
		require.NoError(t, sc.Err())
		require.Equal(t, f.Items, n, f.Name)
		total += n
	}
	require.Equal(t, m.Items, total)
	return seen
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

// Export the portfolios and alleycat designs from both databases, load
// the files through the emulator into a second table: it holds exactly
// what migrate writes, every item once, and verify passes on it.
func TestExportRoundTripEqualsMigrate(t *testing.T) {
	designs := []struct{ config, sql string }{
		{"configs/portfolios.yaml", "testdata/portfolios/"},
		{"configs/alleycat.yaml", "testdata/alleycat/"},
	}
	for _, d := range testenv.Drivers() {
		for _, design := range designs {
			t.Run(d.Name+"/"+filepath.Base(design.config), func(t *testing.T) {
				tg := newTarget(t, d, design.config, design.sql+d.Name+".sql")
				r := tg.run(t, "", "table", "create")
				require.Equal(t, 0, r.Code, r.Output())
				dir := t.TempDir()
				r = tg.run(t, dir, "migrate", "--progress", "none")
				require.Equal(t, 0, r.Code, r.Output())
				want := testenv.ScanItems(t, tg.client, tg.table)

				out := filepath.Join(t.TempDir(), "export")
				r = tg.run(t, dir, "export", "--progress", "none", "--to", "file://"+out+"/")
				require.Equal(t, 0, r.Code, r.Output())

				imported := &target{client: tg.client, table: testenv.NewTableName(t), dsn: tg.dsn}
				testenv.DeleteTableOnCleanup(t, tg.client, imported.table)
				imported.flags = []string{"--config", clitest.RepoPath(design.config), "--source-dsn", tg.dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", imported.table}
				r = imported.run(t, "", "table", "create")
				require.Equal(t, 0, r.Code, r.Output())
				seen := importEmulator(t, tg.client, imported.table, out, "PK", "SK")
				for k, n := range seen {
					require.Equal(t, 1, n, "item %s is in the files %d times", k, n)
				}
				require.Equal(t, want, testenv.ScanItems(t, tg.client, imported.table))
				r = imported.run(t, dir, "verify")
				require.Equal(t, 0, r.Code, r.Output())

				// A second export to the same place is refused.
				r = tg.run(t, dir, "export", "--progress", "none", "--to", "file://"+out+"/")
				require.Equal(t, exitUsage, r.Code, r.Output())
			})
		}
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
