package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// memSnapshot serves rows from memory, per table, in key order (the first
// column is an integer key). It can fail a read once, as a lost connection.
type memSnapshot struct {
	rows     map[string][]value.Row
	failOnce atomic.Bool
}

type lostConn struct{}

func (lostConn) Error() string { return "connection reset" }

func (m *memSnapshot) Shards(_ context.Context, q *source.Query, n int) ([]source.Range, error) {
	rows := m.rows[q.Base.Name]
	if len(rows) == 0 {
		return []source.Range{source.Full}, nil
	}
	return source.IntShards(rows[0][0].I, rows[len(rows)-1][0].I, n), nil
}

func (m *memSnapshot) Count(context.Context, *source.Query, source.Range, bool) (int64, error) {
	return -1, nil
}

// ReadNested implements source.Snapshot; the fake has no nested tables.
func (m *memSnapshot) ReadNested(context.Context, *source.Query, []*source.Query, source.Range, []value.Value, int, func(value.Row, [][]value.Row) error) error {
	return errors.New("fake snapshot: no nested reads")
}

func (m *memSnapshot) Read(ctx context.Context, q *source.Query, r source.Range, after []value.Value, _ int, emit func(value.Row) error) error {
	for i, row := range m.rows[q.Base.Name] {
		k := row[0].I
		if (r.Lo != nil && k < r.Lo.I) || (r.Hi != nil && k >= r.Hi.I) || (after != nil && k <= after[0].I) {
			continue
		}
		if i == 3 && m.failOnce.CompareAndSwap(true, false) {
			return lostConn{}
		}
		if err := emit(append(value.Row(nil), row...)); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (m *memSnapshot) Info() source.SnapshotInfo { return source.SnapshotInfo{} }
func (m *memSnapshot) Retryable(err error) bool  { return errors.As(err, new(lostConn)) }
func (m *memSnapshot) Close() error              { return nil }

func runOn(t *testing.T, yaml string, rows map[string][]value.Row, opts Options) *Report {
	t.Helper()
	p := compileFor(t, yaml)
	rep, err := Run(context.Background(), Input{Plan: p, Schema: testSchema(), Snapshot: &memSnapshot{rows: rows}}, opts)
	require.NoError(t, err)
	return rep
}

func dataFindings(r *Report) []lf {
	out := []lf{}
	for _, f := range r.Findings {
		if f.Origin == Data {
			out = append(out, lf{string(f.Severity), f.Check, f.Path, f.Message})
		}
	}
	return out
}

const hostsMapping = head + `
target:
  table: hosts
  key: {pk: PK, sk: SK}
  indexes:
    GSI1: {type: global, pk: GSI1PK, sk: SK, projection: keys_only}
entities:
  host:
    from: hosts
    key: {pk: "HOST#${id}", sk: HOST}
    index: {GSI1: {pk: "${name}"}}
`

func hostRows(names ...string) []value.Row {
	var rows []value.Row
	for i, n := range names {
		v := value.StringValue(n)
		if n == "" {
			v = value.NullValue()
		}
		rows = append(rows, value.Row{value.IntValue(int64(i + 1)), v})
	}
	return rows
}

// Sizes and units by hand: PK "HOST#n" (2+6), SK "HOST" (2+4) and
// GSI1PK (6+len(name)) make 20 + len(name) bytes; a KEYS_ONLY entry holds
// the same three attributes; a NULL name leaves the item out of GSI1.
func TestMeasureByHand(t *testing.T) {
	long := strings.Repeat("n", 1100) // 1,120 bytes: 2 units
	rep := runOn(t, hostsMapping, map[string][]value.Row{"hosts": hostRows("a", "bb", "", long)}, Options{Readers: 2, MaxWCU: 3})
	require.Equal(t, StatusOK, rep.Status)
	e := rep.Entities[0]
	require.Equal(t, EntityReport{
		Entity: "host", Rows: 4, Items: 4, Bytes: 21 + 22 + 14 + 1120,
		ItemSize:      SizeStats{Min: 14, P50: 21, P99: 1120, Max: 1120},
		SizeHistogram: []SizeBucket{{Min: 8, Max: 15, Items: 1}, {Min: 16, Max: 31, Items: 2}, {Min: 1024, Max: 2047, Items: 1}},
		MaxPKBytes:    6, MaxSKBytes: 4, WriteUnits: 1 + 1 + 1 + 2,
		IndexUnits: []UnitCount{{Index: "GSI1", Items: 3, Units: 1 + 1 + 2}},
	}, e)
	require.Equal(t, []LargeItem{
		{Entity: "host", SourceKey: "id=4", Key: `(PK "HOST#4", SK "HOST")`, Bytes: 1120},
		{Entity: "host", SourceKey: "id=2", Key: `(PK "HOST#2", SK "HOST")`, Bytes: 22},
		{Entity: "host", SourceKey: "id=1", Key: `(PK "HOST#1", SK "HOST")`, Bytes: 21},
		{Entity: "host", SourceKey: "id=3", Key: `(PK "HOST#3", SK "HOST")`, Bytes: 14},
	}, rep.Totals.LargestItems)
	require.Equal(t, int64(5), rep.Estimates.WriteUnits.Table)
	require.Equal(t, int64(9), rep.Estimates.WriteUnits.Total)
	require.InDelta(t, 9*DefaultWritePrice/1e6, rep.Estimates.Cost.TotalUSD, 1e-15)
	require.InDelta(t, 5.0/3, rep.Estimates.Duration.Seconds, 1e-12)
	require.Equal(t, int64(1177+400), rep.Estimates.Storage.TableBytes)
	require.Equal(t, int64(3), rep.Indexes[0].PartitionKeys.Distinct)
	require.True(t, rep.Totals.Duplicates.Exact)
}

// Rows that fail to build are findings, listed up to a limit: errors under
// the fail policy, warnings when the entity skips them.
func TestMeasureRowErrors(t *testing.T) {
	yaml := head + `
target: {table: hosts, key: {pk: PK, sk: SK}}
entities:
  host:
    from: hosts
    key: {pk: "HOST#${name}", sk: "${id}"}
`
	rows := map[string][]value.Row{"hosts": hostRows("a", "", "", "", "b")}
	rep := runOn(t, yaml, rows, Options{Readers: 1, MaxListed: 2})
	require.Equal(t, StatusDataErrors, rep.Status)
	require.Equal(t, []lf{
		{"error", "data.row_error", "entities.host", `entity host, row id=2: PK is NULL: template "HOST#${name}" references a NULL column`},
		{"error", "data.row_error", "entities.host", `entity host, row id=3: PK is NULL: template "HOST#${name}" references a NULL column`},
		{"error", "data.row_error", "", "1 more like the above are not listed"},
	}, dataFindings(rep))
	require.Equal(t, int64(3), rep.Entities[0].RowErrors)
	require.Equal(t, int64(2), rep.Entities[0].Items)

	rep = runOn(t, strings.Replace(yaml, "from: hosts", "from: hosts\n    on_error: skip", 1), rows, Options{Readers: 1})
	require.Equal(t, StatusOK, rep.Status)
	require.Equal(t, 3, rep.Counts.Warnings)
}

// A sample is chosen by key hash, the same rows every time, and scaled.
func TestMeasureSample(t *testing.T) {
	names := make([]string, 2000)
	for i := range names {
		names[i] = fmt.Sprintf("h%d", i%7)
	}
	rows := map[string][]value.Row{"hosts": hostRows(names...)}
	rep := runOn(t, hostsMapping, rows, Options{Sample: 0.25})
	s := rep.Sampling
	require.Equal(t, int64(2000), s.RowsRead)
	require.InDelta(t, 500, s.RowsSampled, 60)
	require.Equal(t, 4*s.RowsSampled, rep.Entities[0].Rows)
	require.Equal(t, 4*s.RowsSampled, rep.Totals.Items)
	require.Contains(t, s.Note, "scaled by 1/0.25")
	again := runOn(t, hostsMapping, rows, Options{Sample: 0.25})
	require.Equal(t, s.RowsSampled, again.Sampling.RowsSampled)
}

// Past --max-keys, heavy hitters are still found, with a stated bound.
func TestMeasureHeavyHitters(t *testing.T) {
	names := make([]string, 3000)
	for i := range names {
		names[i] = fmt.Sprintf("tail%d", i)
		if i%3 == 0 {
			names[i] = "hot"
		}
	}
	rows := map[string][]value.Row{"hosts": hostRows(names...)}
	rep := runOn(t, hostsMapping, rows, Options{MaxKeys: 50, HeavyHitters: 20, Limits: Limits{
		ItemBytes: 400 << 10, PartitionKeyBytes: 2048, SortKeyBytes: 1024, LSICollectionBytes: 10 << 30, PartitionWCU: 100,
	}})
	gsi := rep.Indexes[0].PartitionKeys
	require.False(t, gsi.CountsExact)
	require.InEpsilon(t, 2001, float64(gsi.Distinct), 0.03)
	top := gsi.TopByItems[0]
	require.Equal(t, "hot", top.Key)
	require.GreaterOrEqual(t, top.Items, int64(1000))
	require.LessOrEqual(t, top.Items-top.Overstated, int64(1000))
	require.Contains(t, strings.Join(rep.Methods, "\n"), "Space-Saving (20 counters)")
	// 1,000 units in 3,000/4,000 s is 1,333 per second, over the lowered 100.
	require.Len(t, dataFindings(rep), 1)
	require.Equal(t, "partition.hot", rep.Findings[0].Check)
}

// A lost connection is read again from the last row.
func TestMeasureRetriesLostConnection(t *testing.T) {
	snap := &memSnapshot{rows: map[string][]value.Row{"hosts": hostRows("a", "b", "c", "d", "e")}}
	snap.failOnce.Store(true)
	p := compileFor(t, hostsMapping)
	rep, err := Run(context.Background(), Input{Plan: p, Snapshot: snap}, Options{Readers: 1, ShardsPerEntity: 1})
	require.NoError(t, err)
	require.Equal(t, int64(5), rep.Totals.Items)
	require.False(t, snap.failOnce.Load())
}

// Duplicate keys past --max-dup-keys are a stated lower bound.
func TestMeasureDuplicateBound(t *testing.T) {
	yaml := head + `
target: {table: hosts, key: {pk: PK, sk: SK}}
entities:
  host:
    from: hosts
    key: {pk: "${name}", sk: HOST}
    primary_key: [id]
`
	rows := map[string][]value.Row{"hosts": hostRows("a", "b", "a", "c", "d", "d")}
	rep := runOn(t, yaml, rows, Options{Readers: 1, ShardsPerEntity: 1, MaxDupKeys: 3})
	require.Equal(t, DuplicateReport{Count: 1, Exact: false, Unchecked: 2}, rep.Totals.Duplicates)
	require.Equal(t, StatusMappingErrors, rep.Status, "the key also leaves out id")
	require.Contains(t, dataFindings(rep), lf{"error", "data.duplicate_key", "entities.host", `item key (PK "a", SK "HOST") is produced again by host row id=3: one item would silently overwrite the other`})
	require.Contains(t, strings.Join(rep.Methods, "\n"), "2 keys arrived after the set was full")
}

// Rows Build rejects for their size are measured without the limits and
// reported by how much they are over; lowered limits apply to the rest.
func TestMeasureOversizeRows(t *testing.T) {
	yaml := head + `
target:
  table: hosts
  key: {pk: PK, sk: SK}
  indexes:
    GSI1: {type: global, pk: GSI1PK}
entities:
  host:
    from: hosts
    key: {pk: "HOST#${id}", sk: "${name}"}
    index: {GSI1: {pk: "G#${name}"}}
`
	rows := map[string][]value.Row{"hosts": hostRows("ok", strings.Repeat("s", 1100), strings.Repeat("b", 2100), strings.Repeat("x", 410_000))}
	rep := runOn(t, yaml, rows, Options{Readers: 1})
	require.Equal(t, []lf{
		{"error", "limit.key_length", "entities.host", "row id=2: sort key SK is 1,100 bytes; the limit is 1,024"},
		{"error", "limit.key_length", "entities.host", "row id=3: index GSI1 partition key GSI1PK is 2,102 bytes; the limit is 2,048"},
		{"error", "limit.key_length", "entities.host", "row id=3: sort key SK is 2,100 bytes; the limit is 1,024"},
		{"error", "limit.key_length", "entities.host", "row id=4: index GSI1 partition key GSI1PK is 410,002 bytes; the limit is 2,048"},
		// PK "HOST#4" 2+6, SK 2+410,000, GSI1PK 6+410,002.
		{"error", "limit.item_size", "entities.host", "row id=4: item is 820,018 bytes; the limit is 409,600 (attribute names included)"},
		{"error", "limit.key_length", "entities.host", "row id=4: sort key SK is 410,000 bytes; the limit is 1,024"},
	}, dataFindings(rep))
	require.Equal(t, StatusDataErrors, rep.Status)
	require.Equal(t, int64(3), rep.Entities[0].RowsOverLimit)
	require.Equal(t, int64(1), rep.Totals.Items)

	lowered := DefaultLimits()
	lowered.SortKeyBytes = 1
	rep = runOn(t, yaml, map[string][]value.Row{"hosts": hostRows("ok")}, Options{Limits: lowered})
	require.Equal(t, []lf{{"error", "limit.key_length", "entities.host", "row id=1: sort key SK is 2 bytes; the limit is 1"}}, dataFindings(rep))
}

// A binary partition key reads in base64 wherever plan names it, as in
// every report: the duplicate-key finding, the largest items and the
// hottest keys.
func TestMeasureShowsBinaryKeysInBase64(t *testing.T) {
	schema := testSchema()
	tags := &source.Table{Ref: source.TableRef{Name: "tags"}, PrimaryKey: []string{"id"}, Unique: [][]string{{"id"}},
		Columns: []source.Column{{Name: "id", Kind: value.Int}, {Name: "tag", Kind: value.Bytes}}}
	schema.Tables[tags.Ref] = tags
	cfg, err := mapping.Parse([]byte(head + `
target: {table: tags, key: {pk: PK, sk: SK}, attribute_types: {PK: B}}
entities:
  tag:
    from: tags
    key: {pk: "${tag}", sk: TAG}
    primary_key: [id]
lint: {ignore: [key.incomplete]}
`))
	require.NoError(t, err)
	p, err := mapping.Compile(cfg, schema, mapping.Options{})
	require.NoError(t, err)
	require.Equal(t, mapping.TypeB, p.Table.PK.Type)
	tag := value.BytesValue([]byte{0x00, 0xff, 'a'})
	rows := map[string][]value.Row{"tags": {{value.IntValue(1), tag}, {value.IntValue(2), tag}}}
	rep, err := Run(context.Background(), Input{Plan: p, Schema: schema, Snapshot: &memSnapshot{rows: rows}}, Options{Readers: 1, ShardsPerEntity: 1})
	require.NoError(t, err)

	require.Contains(t, dataFindings(rep), lf{"error", "data.duplicate_key", "entities.tag", `item key (PK "AP9h", SK "TAG") is produced again by tag row id=2: one item would silently overwrite the other`})
	require.NotEmpty(t, rep.Totals.LargestItems)
	require.Equal(t, `(PK "AP9h", SK "TAG")`, rep.Totals.LargestItems[0].Key)
	require.NotEmpty(t, rep.Totals.PartitionKeys.TopByItems)
	require.Equal(t, "AP9h", rep.Totals.PartitionKeys.TopByItems[0].Key)
}

// An index that a NULL leaves an item out of on purpose says so: with
// sparse: true on the entity's index: entry, the top manager (who reports
// to no one) is counted in a note, not warned about as half an index key,
// and a design without other findings ends clean.
func TestMeasureSparseIndexOnPurpose(t *testing.T) {
	const mapping = head + `
target:
  table: shop
  key: {pk: PK, sk: SK}
  indexes:
    GSI1: {type: global, pk: GSI1PK, sk: GSI1SK}
entities:
  employee:
    from: employees
    key: {pk: "EMPLOYEE#${employee_id}", sk: "EMPLOYEE#${employee_id}"}
    index:
      GSI1: {pk: "EMPLOYEE#${reports_to}", sk: "EMPLOYEE#${employee_id}"SPARSE}
    attributes: {LastName: last_name}
`
	rows := map[string][]value.Row{"employees": {
		{value.IntValue(1), value.IntValue(2), value.StringValue("Davolio")},
		{value.IntValue(2), value.NullValue(), value.StringValue("Fuller")},
		{value.IntValue(3), value.IntValue(2), value.StringValue("Leverling")},
		{value.IntValue(5), value.IntValue(2), value.StringValue("Buchanan")},
		{value.IntValue(6), value.IntValue(5), value.StringValue("Suyama")},
	}}
	for _, tc := range []struct {
		name, sparse string
		want         []lf
		status       string
		partial      int64
		sparseItems  int64
	}{
		{"not marked", "", []lf{{"warning", "data.partial_index_key", "entities.employee.index.GSI1",
			"1 items have only half of index GSI1's key (GSI1PK, GSI1SK), e.g. row employee_id=2: they are not in the index, and the half they have is left off them unless the table's key or another index needs it (half_key: keep keeps it)"}},
			"no errors; review the warnings", 1, 0},
		{"sparse: true", ", sparse: true", []lf{{"note", "data.sparse_index", "entities.employee.index.GSI1",
			"1 item left out of index GSI1 on purpose (sparse: true), e.g. row employee_id=2"}},
			"no errors", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := runOn(t, strings.Replace(mapping, "SPARSE", tc.sparse, 1), rows, Options{Readers: 1})
			require.Equal(t, tc.want, dataFindings(rep))
			require.Equal(t, tc.status, rep.statusLine())
			require.Equal(t, int64(4), rep.Indexes[0].Items, "the four employees with a manager")
			require.Equal(t, tc.partial, rep.Indexes[0].PartialKeyItems)
			require.Equal(t, tc.sparseItems, rep.Indexes[0].SparseItems)
		})
	}
}
