package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/pipeline"
)

// badRowsCase is one row of testdata/badrows that cannot become a DynamoDB
// item: the mapping key the error names ("" when the whole item is at
// fault), the reason, and the offending column with its value as the
// reject file shows it (JSON; "" when it differs between the databases).
type badRowsCase struct {
	name   string
	id     int
	attr   string
	reason string // a regular expression
	column string
	value  string
}

var badRowsCases = []badRowsCase{
	{"null key", 3, "PK", `is NULL: column bin has no value`, "bin", `null`},
	{"empty key", 5, "PK", `key is an empty string; DynamoDB keys cannot be empty`, "bin", `""`},
	{"partition key too long", 7, "PK", `key is 2049 bytes; the limit is 2048`, "bin", `"` + strings.Repeat("b", 2049) + `"`},
	{"sort key too long", 9, "SK", `key is 1025 bytes; the limit is 1024`, "code", `"` + strings.Repeat("c", 1020) + `"`},
	// PK "E5" (2+2), SK "PART#CATALOG-1" (2+14), Description (11+410,000),
	// Price 0.1 (5+2), Weight 0.002 (6+2), _type "part" (5+4).
	{"item over 400 KB", 11, "", `item is 410055 bytes \(largest attribute Description, 410011 bytes\); DynamoDB items are at most 409600 bytes \(400 KB, names included\)`, "description", ""},
	// PostgreSQL numeric prints 123…789, MariaDB decimal(65,4) 123…789.0000.
	{"39 significant digits", 13, "Price", `123456789012345678901234567890123456789(\.0000)? has 39 significant digits; DynamoDB numbers hold at most 38`, "price", ""},
	{"NaN", 15, "Weight", `NaN cannot be stored as a DynamoDB number`, "weight", `"NaN"`},
	{"invalid UTF-8", 17, "Label", `binary value "\\xffno" is not valid UTF-8 text; store it as type B`, "label", `"/25v"`},
	{"set with duplicates", 18, "Tags", `a SS cannot hold duplicates, and "steel" appears twice`, "tags", `["steel","steel"]`},
}

// badRowsGood is what the good rows of testdata/badrows become, the same
// from both databases; some sit exactly at DynamoDB's limits.
func badRowsGood() []map[string]any {
	type m = map[string]any
	n := func(s string) json.Number { return json.Number(s) }
	part := func(pk, code string, attrs m) m {
		attrs["PK"], attrs["SK"], attrs["_type"] = pk, "PART#"+code, "part"
		return attrs
	}
	return []m{
		part("A1", "BOLT-M8", m{"Description": "Hex bolt M8x40", "Price": n("0.25"), "Weight": n("0.012"), "Label": "M8 bolt", "Tags": []any{"steel", "zinc"}}),
		part("A1", "NUT-M8", m{"Description": "Hex nut M8", "Price": n("0.05"), "Weight": n("0.004"), "Label": "écrou M8", "Tags": []any{"steel"}}),
		part("B2", "WASHER-8", m{"Price": n("0.01")}),
		part("B2", "GASKET-120", m{"Description": "Gasket", "Price": n("12345678901234567890123456789012345678"), "Weight": n("1.5"), "Label": "gasket", "Tags": []any{"rubber"}}),
		part(strings.Repeat("b", 2048), "SHELF-MAX", m{"Description": "Top shelf", "Price": n("3.5"), "Weight": n("2")}),
		part("C3", strings.Repeat("c", 1019), m{"Description": "Longest code", "Price": n("1"), "Weight": n("0.5")}),
		part("C3", "MANUAL-1", m{"Description": strings.Repeat("m", 300000), "Price": n("9.99"), "Weight": n("0.25"), "Label": "manual", "Tags": []any{"paper"}}),
		part("D4", "SPRING-5", m{"Description": "Spring", "Price": n("0.75"), "Weight": n("2.5")}),
		part("D4", "PIN-2", m{"Description": "Pin", "Price": n("0"), "Weight": n("0.001"), "Label": "pin", "Tags": []any{"steel", "brass"}}),
	}
}

// badRowsLine renders an item for comparison: sets sorted (DynamoDB
// keeps no order in them) and long strings shortened to a prefix, their
// length and a hash, so that a failure prints readable lines.
func badRowsLine(t *testing.T, item map[string]any) string {
	t.Helper()
	out := make(map[string]any, len(item))
	for k, v := range item {
		switch x := v.(type) {
		case string:
			if len(x) > 64 {
				v = fmt.Sprintf("%.8s… (%d bytes, sha256 %x)", x, len(x), sha256.Sum256([]byte(x)))
			}
		case []any:
			s := append([]any(nil), x...)
			sort.Slice(s, func(i, j int) bool { return fmt.Sprint(s[i]) < fmt.Sprint(s[j]) })
			v = s
		}
		out[k] = v
	}
	b, err := json.Marshal(out)
	require.NoError(t, err)
	return string(b)
}

// badRowsTable scans the table and returns its items as badRowsLine
// lines, sorted.
func badRowsTable(t *testing.T, items []string) []string {
	t.Helper()
	var lines []string
	for _, it := range items {
		var item map[string]any
		d := json.NewDecoder(strings.NewReader(it))
		d.UseNumber()
		require.NoError(t, d.Decode(&item))
		lines = append(lines, badRowsLine(t, item))
	}
	sort.Strings(lines)
	return lines
}

// A row that cannot become a valid DynamoDB item goes through the entity's
// error policy, from PostgreSQL and from MariaDB: every kind of bad row
// (a NULL or empty key, a key or item over DynamoDB's limits, a number
// DynamoDB cannot hold, invalid UTF-8, a set with a duplicate) stops the
// run under fail naming the entity, the source key and the mapping key; is
// counted under skip; goes to the reject file with its values under
// reject; and --max-rejects stops a run with too many. The good rows
// around them, some exactly at the limits, are all written either way.
func TestBadRows(t *testing.T) {
	t.Parallel()
	mappingText, err := os.ReadFile(clitest.RepoPath("testdata/badrows/mapping.yaml"))
	require.NoError(t, err)
	good := badRowsGood()
	var want []string
	for _, it := range good {
		want = append(want, badRowsLine(t, it))
	}
	sort.Strings(want)
	const rows = 18

	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/badrows/"+d.Name+".sql"))
			client := testenv.DynamoClient(t)
			table := testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, client, table)
			endpoint := testenv.DynamoEndpoint(t)

			// config rewrites the mapping's policy and, for one row, adds a
			// filter.
			config := func(t *testing.T, policy, where string) string {
				s := strings.Replace(string(mappingText), "on_error: reject", "on_error: "+policy, 1)
				if where != "" {
					s = strings.Replace(s, "    from: parts\n", "    from: parts\n    where: \""+where+"\"\n", 1)
				}
				return writeMapping(t, s)
			}
			// migrate runs in a fresh directory (no checkpoint) and returns
			// the result, the report and the default reject file's path.
			migrate := func(t *testing.T, cfg string, extra ...string) (clitest.Result, runReport, string) {
				dir := t.TempDir()
				report := filepath.Join(dir, "report.json")
				args := append([]string{"migrate", "--config", cfg, "--source-dsn", dsn, "--endpoint", endpoint, "--table", table,
					"--progress", "none", "--report", report}, extra...)
				r := clitest.Run(t, dir, nil, args...)
				data, err := os.ReadFile(report)
				require.NoError(t, err, r.Output())
				var rep runReport
				require.NoError(t, json.Unmarshal(data, &rep), string(data))
				require.Equal(t, r.Code, rep.ExitCode)
				return r, rep, filepath.Join(dir, ".dynafold", table+".rejects.jsonl")
			}

			r := clitest.Run(t, "", nil, "table", "create", "--config", config(t, "reject", ""), "--endpoint", endpoint, "--table", table)
			require.Equal(t, exitOK, r.Code, r.Output())

			// Every run below writes only good items, so the table always
			// holds exactly them once a run has finished.
			finished := func(t *testing.T, r clitest.Result, rep runReport, rejected, skipped int) {
				t.Helper()
				require.Equal(t, exitRejected, r.Code, r.Output())
				require.Contains(t, r.Stderr, fmt.Sprintf("finished with %d rejected and %d skipped rows", rejected, skipped))
				require.EqualValues(t, rows, rep.Summary.Total.RowsRead)
				require.EqualValues(t, len(good), rep.Summary.Total.ItemsWritten)
				require.EqualValues(t, rejected, rep.Summary.Total.Rejected)
				require.EqualValues(t, skipped, rep.Summary.Total.Skipped)
				require.Equal(t, want, badRowsTable(t, testenv.ScanItems(t, client, table)))
			}
			t.Run("skip", func(t *testing.T) {
				r, rep, rejects := migrate(t, config(t, "skip", ""))
				finished(t, r, rep, 0, len(badRowsCases))
				require.NoFileExists(t, rejects, "skip writes no reject file")
				require.Empty(t, rep.Summary.RejectFile, "and names none")
				require.NotContains(t, r.Stdout, "rejected rows:")
			})

			t.Run("reject", func(t *testing.T) {
				r, rep, rejects := migrate(t, config(t, "reject", ""))
				finished(t, r, rep, len(badRowsCases), 0)
				require.Equal(t, filepath.Join(".dynafold", table+".rejects.jsonl"), rep.Summary.RejectFile)

				f, err := os.Open(rejects)
				require.NoError(t, err)
				defer f.Close()
				got := map[int]pipeline.RejectRecord{}
				sc := bufio.NewScanner(f)
				sc.Buffer(make([]byte, 1<<20), 1<<20)
				for sc.Scan() {
					var rec pipeline.RejectRecord
					require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
					var id int
					require.NoError(t, json.Unmarshal(rec.SourceKey["id"], &id))
					require.Len(t, rec.SourceKey, 1)
					require.NotContains(t, got, id, "row id=%d rejected twice", id)
					got[id] = rec
				}
				require.NoError(t, sc.Err())
				require.Len(t, got, len(badRowsCases))
				for _, c := range badRowsCases {
					rec, ok := got[c.id]
					require.True(t, ok, "%s: row id=%d is not in the reject file", c.name, c.id)
					require.Equal(t, "part", rec.Entity, c.name)
					require.False(t, rec.Time.IsZero(), c.name)
					require.Equal(t, rep.RunID, rec.RunID, "%s: the line names the run", c.name)
					require.Equal(t, c.attr, rec.Attribute, c.name)
					require.Regexp(t, "^"+c.reason+"$", rec.Reason, c.name)
					cols := make([]string, 0, len(rec.Row))
					for col := range rec.Row {
						cols = append(cols, col)
					}
					sort.Strings(cols)
					require.Equal(t, []string{"bin", "code", "description", "id", "label", "price", "tags", "weight"}, cols, "%s: the row's values", c.name)
					require.JSONEq(t, fmt.Sprint(c.id), string(rec.Row["id"]), c.name)
					if c.value != "" {
						require.JSONEq(t, c.value, string(rec.Row[c.column]), c.name)
					}
				}
			})

			t.Run("max-rejects", func(t *testing.T) {
				// Nine bad rows: a limit of 9 lets the run finish; 8 stops
				// it, under skip as under reject.
				r, rep, _ := migrate(t, config(t, "reject", ""), "--max-rejects", "9")
				require.Equal(t, exitRejected, r.Code, r.Output())
				require.EqualValues(t, len(badRowsCases), rep.Summary.Total.Rejected)
				require.Equal(t, want, badRowsTable(t, testenv.ScanItems(t, client, table)))

				for _, policy := range []string{"skip", "reject"} {
					r, rep, _ = migrate(t, config(t, policy, ""), "--max-rejects", "8")
					require.Equal(t, exitFailure, r.Code, r.Output())
					require.Regexp(t, `stopping: 9 rows were skipped or rejected, more than --max-rejects 8; last: entity part, row id=\d+: `, r.Stderr)
					require.Contains(t, rep.Error, "more than --max-rejects 8")
					require.EqualValues(t, len(badRowsCases), rep.Summary.Total.Rejected+rep.Summary.Total.Skipped)
				}
			})

			// Under fail, each bad row alone (a where filter selects it)
			// stops the run with exit 1 and an error naming the row.
			t.Run("fail", func(t *testing.T) {
				for _, c := range badRowsCases {
					t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
						t.Parallel()
						r, rep, rejects := migrate(t, config(t, "fail", fmt.Sprintf("id = %d", c.id)))
						require.Equal(t, exitFailure, r.Code, r.Output())
						where := ""
						if c.attr != "" {
							where = " " + c.attr
						}
						msg := fmt.Sprintf(`entity part, row id=%d:%s %s`, c.id, regexp.QuoteMeta(where), c.reason)
						require.Regexp(t, msg, r.Stderr)
						require.Regexp(t, "^"+msg+"$", rep.Error)
						require.Zero(t, rep.Summary.Total.ItemsWritten)
						require.NoFileExists(t, rejects, "fail writes no reject file")
					})
				}
			})
		})
	}
}
