package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/plan"
)

// planFinding is a finding as the tests compare it.
type planFinding struct {
	Severity, Check, Path, Message string
}

func findingsOf(r *plan.Report) []planFinding {
	out := []planFinding{}
	for _, f := range r.Findings {
		out = append(out, planFinding{string(f.Severity), f.Check, f.Path, f.Message})
	}
	return out
}

// runPlan runs `dynafold plan -o json` and decodes the report.
func runPlan(t *testing.T, args ...string) (clitest.Result, *plan.Report) {
	t.Helper()
	r := clitest.Run(t, "", nil, append([]string{"plan", "--output", "json"}, args...)...)
	var rep plan.Report
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Output())
	return r, &rep
}

// planDB is a fresh database of the driver loaded with the plan tests' data.
func planDB(t *testing.T, d testenv.Driver) string {
	t.Helper()
	dsn := d.NewDB(t)
	testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/plan/"+d.Name+".sql"))
	return dsn
}

func planConfig(name string) string { return clitest.RepoPath("testdata/plan/" + name + ".yaml") }

// exampleArgs are the flags an example mapping needs to run: photos is
// migrated one tenant at a time and has no default tenant on purpose.
var exampleArgs = map[string][]string{
	"photos": {"--var", "tenant=3"},
}

// Every example mapping plans clean against its example data: no errors
// and no warnings, from both databases.
func TestPlanExamplesPlanClean(t *testing.T) {
	t.Parallel()
	configs, err := filepath.Glob(clitest.RepoPath("configs/*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, configs)
	for _, cfg := range configs {
		name := strings.TrimSuffix(filepath.Base(cfg), ".yaml")
		for _, d := range testenv.Drivers() {
			t.Run(name+"/"+d.Name, func(t *testing.T) {
				dsn := d.NewDB(t)
				data := clitest.RepoPath("testdata/" + name + "/" + d.Name + ".sql")
				_, err := os.Stat(data)
				require.NoError(t, err, "example %s needs its data in %s", name, data)
				testenv.LoadSQL(t, d.Name, dsn, data)
				r, rep := runPlan(t, append([]string{"--config", cfg, "--source-dsn", dsn, "--no-target"}, exampleArgs[name]...)...)
				require.Equal(t, 0, r.Code, r.Output())
				require.Equal(t, plan.StatusOK, rep.Status)
				require.Zero(t, rep.Counts.Errors, findingsOf(rep))
				require.Zero(t, rep.Counts.Warnings, findingsOf(rep))
			})
		}
	}
}

// The portfolio example in detail: its notes, its counts, and the target
// described when the endpoint answers.
func TestPlanPortfolio(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/portfolios/"+d.Name+".sql"))
			table := testenv.NewTableName(t)
			r, rep := runPlan(t, "--config", clitest.RepoPath("configs/portfolios.yaml"), "--source-dsn", dsn,
				"--endpoint", testenv.DynamoEndpoint(t), "--table", table)
			require.Equal(t, 0, r.Code, r.Output())
			require.Equal(t, []planFinding{
				{"note", "key.case_fold", "entities.server.key", "the key uses primary-key column id only through lower/upper: values that differ only in letter case would get the same key (the measured duplicate check counts any that exist)"},
				{"note", "key.case_fold", "entities.database.key", "the key uses primary-key column id only through lower/upper: values that differ only in letter case would get the same key (the measured duplicate check counts any that exist)"},
			}, findingsOf(rep))
			require.Equal(t, int64(10), rep.Totals.Rows)
			require.Equal(t, int64(10), rep.Totals.Items)
			require.Equal(t, int64(10), rep.Totals.WriteUnits)
			require.Equal(t, int64(2), rep.Totals.PartitionKeys.Distinct)
			require.Equal(t, "database", rep.Totals.LargestItems[0].Entity)
			require.Equal(t, `id="JeffInternalDB"`, rep.Totals.LargestItems[0].SourceKey)
			require.Equal(t, int64(130), rep.Totals.LargestItems[0].Bytes)
			require.Equal(t, int64(8), rep.Indexes[0].WriteUnits)
			require.Equal(t, int64(4), rep.Indexes[0].PartitionKeys.Distinct)
			require.Equal(t, int64(18), rep.Estimates.WriteUnits.Total)
			require.True(t, rep.Target.Checked)
			require.Empty(t, rep.Target.Error)
			require.False(t, rep.Target.Exists)
			require.Contains(t, rep.Estimates.Duration.RateSource, "assumed: a new on-demand table")

			// An unreachable target is reported, not fatal.
			r, rep = runPlan(t, "--config", clitest.RepoPath("configs/portfolios.yaml"), "--source-dsn", dsn, "--endpoint", "http://127.0.0.1:1")
			require.Equal(t, 0, r.Code, r.Output())
			require.NotEmpty(t, rep.Target.Error)

			// Text and Markdown say the same.
			r = clitest.Run(t, "", nil, "plan", "--config", clitest.RepoPath("configs/portfolios.yaml"), "--source-dsn", dsn, "--no-target")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "write units: 10 table + 8 GSI1 = 18")
			r = clitest.Run(t, "", nil, "plan", "--config", clitest.RepoPath("configs/portfolios.yaml"), "--source-dsn", dsn, "--no-target", "-o", "markdown")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "- Write units: 10 table + 8 GSI1 = 18.")
		})
	}
}

// Mapping errors exit 2 and name the key path; the data check confirms
// the collisions the static check predicts.
func TestPlanMappingErrorsExitTwo(t *testing.T) {
	t.Parallel()
	cases := []struct {
		config string
		want   []planFinding
	}{
		{"collide", []planFinding{
			{"error", "key.collision", "entities.vendor.key", `entities customer and vendor can produce the same PK+SK: no constant text in their keys (pk "${id}" / "${id}", sk "PROFILE" / "PROFILE") tells them apart, so one item would overwrite the other; give each a distinct constant prefix in the sort key, e.g. "VENDOR#${…}"`},
			{"error", "data.duplicate_key", "entities.vendor", `item key (PK "2", SK "PROFILE") is produced again by vendor row id=2: one item would silently overwrite the other`},
			{"note", "name.reserved", "entities.customer.attributes.Name", `"Name" is a DynamoDB reserved word: writes are fine, but queries, filters and updates must refer to it through an expression attribute name (#name)`},
		}},
		{"nonunique", []planFinding{
			{"error", "key.incomplete", "entities.line.key", `the key (pk "ORDER#${order_id}", sk "LINE") does not use column line_no of the primary key (order_id, line_no) of table order_lines: rows that differ only in line_no get the same key and overwrite each other`},
			{"error", "data.duplicate_key", "entities.line", `item key (PK "ORDER#1", SK "LINE") is produced again by line row order_id=1, line_no=2: one item would silently overwrite the other`},
		}},
	}
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := planDB(t, d)
			for _, c := range cases {
				t.Run(c.config, func(t *testing.T) {
					// One reader makes "produced again" name the same row every run.
					r, rep := runPlan(t, "--config", planConfig(c.config), "--source-dsn", dsn, "--no-target", "--concurrency", "1")
					require.Equal(t, exitUsage, r.Code, r.Output())
					require.Equal(t, plan.StatusMappingErrors, rep.Status)
					require.Equal(t, c.want, findingsOf(rep))
					require.Equal(t, int64(1), rep.Totals.Duplicates.Count)
				})
			}
		})
	}
}

// A mapping that does not compile is reported as findings before any
// connection is made.
func TestPlanUncompilableMapping(t *testing.T) {
	t.Parallel()
	f := clitest.RepoPath("testdata/mappings/broken/08-undeclared-index.yaml")
	want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".err")
	require.NoError(t, err)
	r, rep := runPlan(t, "--config", f, "--source-dsn", "postgres://x@127.0.0.1:1/x", "--endpoint", "http://127.0.0.1:1")
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Len(t, rep.Findings, 1)
	require.Equal(t, "mapping", rep.Findings[0].Check)
	require.Contains(t, rep.Findings[0].Path+": "+rep.Findings[0].Message, strings.TrimSpace(string(want)))
	require.Empty(t, r.Stderr)
}

// Data that breaks DynamoDB's hard limits exits 3, naming each row.
func TestPlanDataLimitsExitThree(t *testing.T) {
	t.Parallel()
	lsiNote := planFinding{"note", "index.lsi", "target.indexes.LSI1", "local index LSI1 can only be created with the table (dynafold table create does), and with it every item collection (the items of one PK value and their index entries) is limited to 10 GB; see the measured collection sizes"}
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := planDB(t, d)

			// docs id=2 is 410,000 characters: PK "DOC#2" (2+5 bytes),
			// SK "DOC" (2+3) and Body (4+410,000) make 410,016 bytes.
			r, rep := runPlan(t, "--config", planConfig("limits"), "--source-dsn", dsn, "--no-target")
			require.Equal(t, exitPlanData, r.Code, r.Output())
			require.Equal(t, plan.StatusDataErrors, rep.Status)
			require.Equal(t, []planFinding{
				{"error", "limit.item_size", "entities.doc", "row id=2: item is 410,016 bytes; the limit is 409,600 (attribute names included)"},
				{"error", "limit.key_length", "entities.note", "row id=2: sort key SK is 1,100 bytes; the limit is 1,024"},
			}, findingsOf(rep))
			require.Equal(t, int64(2), rep.Totals.Items, "the rejected rows' items are not counted as written")
			require.Equal(t, int64(1), rep.Entities[0].RowsOverLimit)

			// Customer 1 has 10 orders of 347 bytes (PK 2+10, SK 2+12,
			// LSI1SK 6+11, Note 4+300), each in LSI1 in full: 6,940 bytes.
			r, rep = runPlan(t, "--config", planConfig("lsi"), "--source-dsn", dsn, "--no-target", "--lsi-collection-bytes", "4096")
			require.Equal(t, exitPlanData, r.Code, r.Output())
			require.Equal(t, []planFinding{
				{"error", "limit.lsi_collection", "target.indexes", `item collection PK="CUSTOMER#1" is 6,940 bytes (its items plus their local-index entries); with a local index an item collection is at most 4,096 bytes`},
				lsiNote,
			}, findingsOf(rep))
			require.Equal(t, "CUSTOMER#1", rep.Totals.PartitionKeys.TopByBytes[0].Key)
			require.Equal(t, int64(6940), rep.Totals.PartitionKeys.TopByBytes[0].Bytes)

			// Under DynamoDB's own 10 GB the same data is fine.
			r, rep = runPlan(t, "--config", planConfig("lsi"), "--source-dsn", dsn, "--no-target")
			require.Equal(t, 0, r.Code, r.Output())
			require.Equal(t, []planFinding{lsiNote}, findingsOf(rep))

			// Lowered item and key limits apply to items Build accepts:
			// customer 1's ten orders are over 300 bytes.
			r, rep = runPlan(t, "--config", planConfig("lsi"), "--source-dsn", dsn, "--no-target", "--max-item-bytes", "300")
			require.Equal(t, exitPlanData, r.Code, r.Output())
			require.Equal(t, int64(10), rep.Entities[0].RowsOverLimit)
			require.Contains(t, findingsOf(rep), planFinding{"error", "limit.item_size", "entities.order", "row id=1: item is 347 bytes; the limit is 300 (attribute names included)"})
			require.Equal(t, 10, rep.Counts.Errors)

			// Every partition key is over 8 bytes; ten findings are listed,
			// in key order with one reader, and the rest counted.
			r, rep = runPlan(t, "--config", planConfig("lsi"), "--source-dsn", dsn, "--no-target", "--max-pk-bytes", "8", "--concurrency", "1")
			require.Equal(t, exitPlanData, r.Code, r.Output())
			require.Equal(t, int64(11), rep.Entities[0].RowsOverLimit)
			require.Contains(t, findingsOf(rep), planFinding{"error", "limit.key_length", "entities.order", "row id=10: partition key PK is 10 bytes; the limit is 8"})
			require.Contains(t, findingsOf(rep), planFinding{"error", "limit.key_length", "", "1 more like the above are not listed"})
		})
	}
}

// One GSI key value holding most items warns (exit 0): spread over the
// load it would need more than a partition's write rate.
func TestPlanSkewedGSIKey(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := planDB(t, d)
			// 35 items of 1 write unit at the assumed 4,000 per second load
			// in 35/4,000 s; "open"'s 30 units in that time are 3,429 per
			// second, over the lowered 10.
			r, rep := runPlan(t, "--config", planConfig("skew"), "--source-dsn", dsn, "--no-target", "--partition-wcu", "10")
			require.Equal(t, 0, r.Code, r.Output())
			require.Equal(t, []planFinding{
				{"warning", "partition.hot", "target.indexes.GSI1.pk", `index GSI1 partition key value GSI1PK="STATUS#open" holds 85.7% of its entries (30 of 35) and takes 30 write units: spread over the load it would need 3,429 write units per second, more than the 10 a partition accepts, so writes to it throttle and the load takes at least 3.0s; spread it, e.g. with a write-shard suffix (${…|shard:N})`},
			}, findingsOf(rep))
			gsi := rep.Indexes[0].PartitionKeys
			require.Equal(t, int64(3), gsi.Distinct)
			require.InDelta(t, 30.0/35, gsi.TopShare, 1e-9)
			require.Equal(t, "STATUS#open", gsi.TopByItems[0].Key)
			require.Equal(t, 3.0, rep.Estimates.Duration.Seconds)

			// At DynamoDB's 1,000 per second, 30 units are a burst.
			r, rep = runPlan(t, "--config", planConfig("skew"), "--source-dsn", dsn, "--no-target")
			require.Equal(t, 0, r.Code, r.Output())
			require.Empty(t, findingsOf(rep))

			// A sample is scaled and says so.
			r, rep = runPlan(t, "--config", planConfig("skew"), "--source-dsn", dsn, "--no-target", "--sample", "0.5")
			require.Equal(t, 0, r.Code, r.Output())
			s := rep.Sampling
			require.Equal(t, 0.5, s.Fraction)
			require.Equal(t, int64(35), s.RowsRead)
			require.Less(t, s.RowsSampled, int64(35))
			require.Equal(t, 2*s.RowsSampled, rep.Entities[0].Rows)
			require.Contains(t, s.Note, "sample of 50% of rows")
		})
	}
}

// The write units, cost and duration plan estimates, checked against a
// hand computation and against what migrate counts writing the same data.
func TestPlanWriteUnitsMatchMigrate(t *testing.T) {
	t.Parallel()
	// Item sizes: PK "PART#n" 2+6, SK "PART" 2+4, Payload 7+len,
	// _type "part" 5+4, GSI2PK "PARTS" 6+5, GSI1PK "CAT#x" 6+5 when the
	// category is set: 41 + len (+11).
	//   id 1:   10 + 41 + 11 =    62 bytes -> 1 unit, in GSI1
	//   id 2: 1000 + 41 + 11 = 1,052 bytes -> 2 units, in GSI1
	//   id 3: 2000 + 41      = 2,041 bytes -> 2 units, not in GSI1
	//   id 4: 5000 + 41 + 11 = 5,052 bytes -> 5 units, in GSI1
	// Table 10 units; GSI1 (ALL) 1+2+5 = 8; GSI2 (INCLUDE _type) entries
	// are PK+SK+GSI2PK+_type = 34 bytes, 1 unit each: 4. Total 22.
	const tableUnits, gsi1Units, gsi2Units = 10, 8, 4
	const total = tableUnits + gsi1Units + gsi2Units
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := planDB(t, d)
			client := testenv.DynamoClient(t)
			table := testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, client, table)
			flags := []string{"--config", planConfig("wcu"), "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}

			r, rep := runPlan(t, append(flags, "--max-wcu", "2", "--write-price", "1.25")...)
			require.Equal(t, 0, r.Code, r.Output())
			require.Empty(t, findingsOf(rep))
			e := rep.Estimates
			require.Equal(t, plan.WriteUnitEstimate{Table: tableUnits, Total: total, Indexes: []plan.UnitCount{
				{Index: "GSI1", Items: 3, Units: gsi1Units}, {Index: "GSI2", Items: 4, Units: gsi2Units},
			}}, e.WriteUnits)
			require.Equal(t, int64(62+1052+2041+5052), rep.Totals.Bytes)
			require.InDelta(t, total*1.25/1e6, e.Cost.TotalUSD, 1e-12)
			require.InDelta(t, tableUnits*1.25/1e6, e.Cost.TableUSD, 1e-12)
			require.Equal(t, 1.25, e.Cost.PricePerMillion)
			require.Equal(t, float64(tableUnits)/2, e.Duration.Seconds)
			require.Equal(t, "--max-wcu", e.Duration.RateSource)
			require.Equal(t, int64(62+1052+2041+5052+4*100), e.Storage.TableBytes)

			// The default price is us-east-1's on-demand price, stated.
			_, rep = runPlan(t, flags...)
			require.InDelta(t, total*0.625/1e6, rep.Estimates.Cost.TotalUSD, 1e-12)
			require.Contains(t, rep.Estimates.Cost.Note, "$0.625 per million write request units")

			// migrate counts the same table write units.
			require.Equal(t, 0, clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...).Code)
			dir := t.TempDir()
			r = clitest.Run(t, dir, nil, append([]string{"migrate", "--progress", "none", "--report", "r.json"}, flags...)...)
			require.Equal(t, 0, r.Code, r.Output())
			mig := readReport(t, filepath.Join(dir, "r.json"))
			require.Equal(t, rep.Estimates.WriteUnits.Table, mig.Summary.Sink.WriteUnits)

			// Against the existing table the plan still holds, and the
			// report written with --report carries it.
			r = clitest.Run(t, dir, nil, append([]string{"plan", "--report", "p.json"}, flags...)...)
			require.Equal(t, 0, r.Code, r.Output())
			data, err := os.ReadFile(filepath.Join(dir, "p.json"))
			require.NoError(t, err)
			var saved struct {
				Command  string      `json:"command"`
				ExitCode int         `json:"exit_code"`
				Result   plan.Report `json:"result"`
			}
			require.NoError(t, json.Unmarshal(data, &saved))
			require.Equal(t, "plan", saved.Command)
			require.Equal(t, 0, saved.ExitCode)
			require.True(t, saved.Result.Target.Exists)
			require.Equal(t, int64(tableUnits), saved.Result.Estimates.WriteUnits.Table)
		})
	}
}

// With a provisioned table the duration follows its write capacity.
func TestPlanProvisionedTargetSetsDuration(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0]
	dsn := planDB(t, d)
	body, err := os.ReadFile(planConfig("wcu"))
	require.NoError(t, err)
	cfg := writeMapping(t, strings.Replace(string(body), "  key: {pk: PK, sk: SK}\n", "  key: {pk: PK, sk: SK}\n  billing: provisioned\n  capacity: {read: 5, write: 4}\n", 1))
	client := testenv.DynamoClient(t)
	table := testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, client, table)
	flags := []string{"--config", cfg, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}

	// Before the table exists, the mapping's capacity is used.
	r, rep := runPlan(t, flags...)
	require.Equal(t, 0, r.Code, r.Output())
	require.Equal(t, "the mapping's provisioned write capacity (4)", rep.Estimates.Duration.RateSource)
	require.Equal(t, 10.0/4, rep.Estimates.Duration.Seconds)

	require.Equal(t, 0, clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...).Code)
	r, rep = runPlan(t, flags...)
	require.Equal(t, 0, r.Code, r.Output())
	require.Empty(t, rep.Target.Error)
	require.Equal(t, int64(4), rep.Target.ProvisionedWrite)
	require.Equal(t, "the table's provisioned write capacity (4)", rep.Estimates.Duration.RateSource)
	require.Equal(t, 10.0/4, rep.Estimates.Duration.Seconds)
	require.False(t, math.IsNaN(rep.Estimates.Cost.TotalUSD))
}
