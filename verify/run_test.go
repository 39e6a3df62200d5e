package verify

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

const hostsMapping = `
version: 1
source: {driver: postgres}
target:
  table: things
  key: {pk: PK, sk: SK}
  type_attribute: _type
entities:
  group:
    from: groups
    key: {pk: "G#${id}", sk: "GROUP"}
    attributes: {Name: name}
  host:
    from: hosts
    key: {pk: "G#${grp}", sk: "HOST#${id|pad:6}"}
    attributes:
      Name: name
      RAM: {from: ram, type: N}
`

var hostsTables = map[string][]source.Column{
	"groups": {{Name: "id", Kind: value.Int}, {Name: "name", Kind: value.String}},
	"hosts":  {{Name: "id", Kind: value.Int}, {Name: "grp", Kind: value.Int, Nullable: true}, {Name: "name", Kind: value.String}, {Name: "ram", Kind: value.Decimal}},
}

// hostsSource has groups 1..groups and hosts 1..hosts, host i in group
// i%groups+1.
func hostsSource(groups, hosts int) *fakeSnapshot {
	snap := &fakeSnapshot{rows: map[string][]value.Row{}}
	for i := 1; i <= groups; i++ {
		snap.rows["groups"] = append(snap.rows["groups"], value.Row{value.IntValue(int64(i)), value.StringValue(fmt.Sprintf("group %d", i))})
	}
	for i := 1; i <= hosts; i++ {
		snap.rows["hosts"] = append(snap.rows["hosts"], value.Row{
			value.IntValue(int64(i)), value.IntValue(int64(i%groups + 1)), value.StringValue(fmt.Sprintf("host-%d", i)), value.DecimalValue("16.50"),
		})
	}
	return snap
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func run(t *testing.T, in Input, opts Options) *Report {
	t.Helper()
	opts.Sleep = noSleep
	opts.TempDir = t.TempDir()
	rep, err := Run(context.Background(), in, opts)
	require.NoError(t, err)
	return rep
}

func keyOf(pk, sk string) Key { return Key{PK: pk, SK: &sk} }

func findingKeys(fs []Finding) []Key {
	out := []Key{}
	for _, f := range fs {
		out = append(out, f.Key)
	}
	return out
}

func TestRunAfterCleanMigrationIsInSync(t *testing.T) {
	for _, mode := range []Mode{ModeVerify, ModeDiff} {
		t.Run(string(mode), func(t *testing.T) {
			p := compile(t, hostsMapping, hostsTables)
			snap := hostsSource(3, 40)
			tbl := newFakeTable("S")
			migrate(t, p, snap, tbl)
			rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: mode})
			require.True(t, rep.InSync)
			require.Equal(t, Counts{RowsSeen: 43, RowsSampled: 43, Items: 43, Unchanged: 43}, rep.Totals)
			require.Equal(t, EntityCounts{Entity: "host", Counts: Counts{RowsSeen: 40, RowsSampled: 40, Items: 40, Unchanged: 40}}, rep.Entities[1])
			require.EqualValues(t, 3, rep.CollectionsSwept)
			require.Empty(t, rep.Examples.Create)
		})
	}
}

// tamper makes the four kinds of damage of the issue, plus two items that
// must not be reported: someone else's item in a touched collection, and a
// mapping-like item in a collection no row touches.
func tamper(tbl *fakeTable) {
	tbl.remove("G#1", "HOST#000003")
	g := tbl.get("G#3", "GROUP")
	g["Name"] = s("renamed")
	h := tbl.get("G#2", "HOST#000007")
	h["Extra"] = n("1")
	tbl.put(map[string]types.AttributeValue{"PK": s("G#1"), "SK": s("HOST#999999"), "_type": s("host"), "Name": s("ghost")})
	tbl.put(map[string]types.AttributeValue{"PK": s("G#1"), "SK": s("NOTE#1"), "Text": s("not ours")})
	tbl.put(map[string]types.AttributeValue{"PK": s("G#9"), "SK": s("HOST#000001"), "_type": s("host")})
}

func TestRunFindsEachDifference(t *testing.T) {
	for _, tt := range []struct {
		sweep Sweep
		// stale are the stale keys found: the table sweep also finds the
		// host in G#9, a collection no row produces.
		stale []Key
	}{
		{SweepTable, []Key{keyOf("G#1", "HOST#999999"), keyOf("G#9", "HOST#000001")}},
		{SweepCollections, []Key{keyOf("G#1", "HOST#999999")}},
	} {
		t.Run(string(tt.sweep), func(t *testing.T) {
			p := compile(t, hostsMapping, hostsTables)
			snap := hostsSource(3, 40)
			tbl := newFakeTable("S")
			migrate(t, p, snap, tbl)
			tamper(tbl)

			rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: ModeVerify, Sweep: tt.sweep})
			require.False(t, rep.InSync)
			require.Equal(t, tt.sweep, rep.Sweep)
			require.Equal(t, Counts{RowsSeen: 43, RowsSampled: 43, Items: 43, Create: 1, Update: 2, Unchanged: 40, Stale: int64(len(tt.stale))}, rep.Totals)

			require.Equal(t, []Key{keyOf("G#1", "HOST#000003")}, findingKeys(rep.Examples.Create))
			create := rep.Examples.Create[0]
			require.Equal(t, "host", create.Entity)
			require.Equal(t, []string{"Name", "PK", "RAM", "SK", "_type"}, changedAttrs(create.Changes))

			require.Equal(t, []Key{keyOf("G#2", "HOST#000007"), keyOf("G#3", "GROUP")}, findingKeys(rep.Examples.Update))
			require.Equal(t, []Change{{Attribute: "Extra", Op: OpRemove, Old: valueOf(n("1"))}}, rep.Examples.Update[0].Changes)
			require.Equal(t, []Change{{Attribute: "Name", Op: OpChange, Old: valueOf(s("renamed")), New: valueOf(s("group 3"))}}, rep.Examples.Update[1].Changes)

			require.Equal(t, tt.stale, findingKeys(rep.Examples.Stale))
			require.Equal(t, "host", rep.Examples.Stale[0].Entity)
			require.Equal(t, "host", rep.Examples.Stale[0].Type)
			// The example lists every attribute of the item, although the
			// table sweep's Scan read its key and type only.
			require.Equal(t, []string{"Name", "PK", "SK", "_type"}, changedAttrs(rep.Examples.Stale[0].Changes))
			require.EqualValues(t, 1, rep.OtherItems, "NOTE#1 is not the mapping's")
		})
	}
}

func changedAttrs(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Attribute)
	}
	return out
}

// Numbers are compared as numbers: 16.5 in the table equals 16.50 made
// from the source.
func TestRunComparesNumbersByValue(t *testing.T) {
	p := compile(t, hostsMapping, hostsTables)
	snap := hostsSource(1, 3)
	tbl := newFakeTable("S")
	migrate(t, p, snap, tbl)
	tbl.get("G#1", "HOST#000001")["RAM"] = n("1.65E1")
	rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{})
	require.True(t, rep.InSync, "%+v", rep.Examples)
}

func TestRunRetriesUnprocessedKeysAndThrottling(t *testing.T) {
	p := compile(t, hostsMapping, hostsTables)
	snap := hostsSource(3, 250)
	tbl := newFakeTable("S")
	migrate(t, p, snap, tbl)
	tbl.unprocessEvery, tbl.throttleFirst = 3, 2
	rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Lookups: 2})
	require.True(t, rep.InSync)
	require.EqualValues(t, 253, rep.Totals.Unchanged)
}

// One collection far larger than a chunk of keys, with keys spilled to
// many runs (more than one merge can take), and stale items at its start,
// middle and end.
func TestRunLargeCollectionSpilled(t *testing.T) {
	p := compile(t, hostsMapping, hostsTables)
	snap := hostsSource(1, 3*chunkKeys)
	tbl := newFakeTable("S")
	tbl.pageSize = 1000
	migrate(t, p, snap, tbl)
	stale := []string{"HOST#", "HOST#000000", "HOST#004096x", "HOST#012289", "HOST#999999"}
	for _, sk := range stale {
		tbl.put(map[string]types.AttributeValue{"PK": s("G#1"), "SK": s(sk)})
	}
	rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: ModeDiff, SpillBytes: 2000, Examples: 100, Readers: 3})
	var want []Key
	for _, sk := range stale {
		want = append(want, keyOf("G#1", sk))
	}
	require.Equal(t, want, findingKeys(rep.Examples.Stale))
	require.EqualValues(t, 3*chunkKeys+1, rep.Totals.Unchanged)
	require.EqualValues(t, 1, rep.CollectionsSwept)
}

// Sort keys that are numbers are merged in numeric order.
func TestRunNumericSortKeys(t *testing.T) {
	p := compile(t, `
version: 1
source: {driver: postgres}
target:
  table: things
  key: {pk: PK, sk: SK}
  attribute_types: {SK: N}
  type_attribute: _type
entities:
  reading:
    from: readings
    key: {pk: "R", sk: "${value}"}
`, map[string][]source.Column{"readings": {{Name: "id", Kind: value.Int}, {Name: "value", Kind: value.Decimal}}})
	snap := &fakeSnapshot{rows: map[string][]value.Row{}}
	for i, v := range []string{"-100", "-1.5", "-0.25", "0", "0.001", "2", "10", "10.5", "1e3"} {
		snap.rows["readings"] = append(snap.rows["readings"], value.Row{value.IntValue(int64(i)), value.DecimalValue(v)})
	}
	tbl := newFakeTable("N")
	migrate(t, p, snap, tbl)
	for _, v := range []string{"-1000", "-1", "1", "9", "11", "100000"} {
		tbl.put(map[string]types.AttributeValue{"PK": s("R"), "SK": n(v), "_type": s("reading")})
	}
	rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{})
	require.EqualValues(t, 9, rep.Totals.Unchanged)
	var got []string
	for _, f := range rep.Examples.Stale {
		got = append(got, *f.Key.SK)
	}
	require.ElementsMatch(t, []string{"-1000", "-1", "1", "9", "11", "100000"}, got)
}

func TestPruneDeletesStaleItems(t *testing.T) {
	for _, tt := range []struct {
		sweep   Sweep
		deleted int64
		// emptied: the host in G#9, a collection no row produces, is deleted.
		emptied bool
	}{
		{SweepTable, 32, true},
		{SweepCollections, 31, false},
	} {
		t.Run(string(tt.sweep), func(t *testing.T) {
			p := compile(t, hostsMapping, hostsTables)
			snap := hostsSource(3, 40)
			tbl := newFakeTable("S")
			migrate(t, p, snap, tbl)
			tamper(tbl)
			for i := range 30 { // more than one delete batch in one collection
				tbl.put(map[string]types.AttributeValue{"PK": s("G#2"), "SK": s(fmt.Sprintf("HOST#9%05d", i)), "_type": s("host")})
			}
			rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: ModePrune, Delete: tbl, Sweep: tt.sweep})
			require.Equal(t, tt.deleted, rep.Deleted)
			require.Equal(t, tt.deleted, rep.Totals.Stale)
			require.True(t, rep.InSync)
			require.Zero(t, tbl.gets.Load(), "prune looks nothing up")
			require.Nil(t, tbl.get("G#1", "HOST#999999"))
			require.NotNil(t, tbl.get("G#1", "NOTE#1"), "someone else's item stays")
			require.EqualValues(t, 1, rep.OtherItems)
			require.Equal(t, tt.emptied, tbl.get("G#9", "HOST#000001") == nil)

			again := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: ModeDiff, Sweep: tt.sweep})
			require.Zero(t, again.Totals.Stale)
		})
	}
}

func TestPruneRefusesWhenRowsCannotBecomeItems(t *testing.T) {
	p := compile(t, hostsMapping, hostsTables)
	snap := hostsSource(3, 10)
	snap.rows["hosts"][4][1] = value.NullValue()
	tbl := newFakeTable("S")
	migrate(t, p, snap, tbl)
	_, err := Run(context.Background(), Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: ModePrune, Delete: tbl, TempDir: t.TempDir()})
	require.ErrorContains(t, err, "not pruning: 1 source rows cannot become items")
}

func TestRunReportsRowErrorsAndDuplicateKeys(t *testing.T) {
	p := compile(t, `
version: 1
source: {driver: postgres}
target: {table: things, key: {pk: PK, sk: SK}}
entities:
  host:
    from: hosts
    key: {pk: "G#${grp}", sk: "HOST#${name}"}
`, hostsTables)
	snap := hostsSource(2, 6)
	// Host 2 takes host 1's name and group: both make one key.
	snap.rows["hosts"][1][2] = value.StringValue("host-1")
	snap.rows["hosts"][1][1] = snap.rows["hosts"][0][1]
	snap.rows["hosts"][3][1] = value.NullValue()
	tbl := newFakeTable("S")
	migrate(t, p, snap, tbl)
	rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{})
	require.EqualValues(t, 1, rep.Totals.RowErrors)
	require.Equal(t, []RowError{{Entity: "host", SourceKey: "id=4", Attribute: "PK", Reason: `is NULL: template "G#${grp}" references a NULL column`}}, rep.RowErrors)
	require.EqualValues(t, 1, rep.DuplicateKeys)
}

func TestSampleIsDeterministic(t *testing.T) {
	p := compile(t, hostsMapping, hostsTables)
	snap := hostsSource(400, 400)
	tbl := newFakeTable("S")
	migrate(t, p, snap, tbl)
	a := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Sample: 0.25, Seed: 7})
	b := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Sample: 0.25, Seed: 7})
	c := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Sample: 0.25, Seed: 8})
	require.Equal(t, a.Totals, b.Totals)
	require.EqualValues(t, 800, a.Totals.RowsSeen)
	require.InDelta(t, 200, a.Totals.RowsSampled, 40)
	require.Equal(t, a.Totals.RowsSampled, a.Totals.Items)
	require.NotEqual(t, a.Totals.RowsSampled, c.Totals.RowsSampled)
	require.Equal(t, &Sample{Fraction: 0.25, Seed: 7}, a.Sample)
	require.EqualValues(t, 400, a.CollectionsSwept, "a table sweep sweeps every collection, sampled or not")
	require.True(t, a.InSync)
	d := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Sample: 0.25, Seed: 7, Sweep: SweepCollections})
	require.Equal(t, a.Totals, d.Totals)
	require.Less(t, d.CollectionsSwept, int64(300), "a collections sweep sweeps only collections of sampled rows")
}

// With a collections sweep, a stale item is found only in a collection of
// a sampled row, and a collection's expected keys include those of
// unsampled rows; a table sweep finds every one.
func TestSampleLimitsStaleSearchToTouchedCollections(t *testing.T) {
	p := compile(t, hostsMapping, hostsTables)
	snap := hostsSource(200, 200)
	tbl := newFakeTable("S")
	migrate(t, p, snap, tbl)
	for g := 1; g <= 200; g++ {
		tbl.put(map[string]types.AttributeValue{"PK": s(fmt.Sprintf("G#%d", g)), "SK": s("HOST#999999"), "_type": s("host")})
	}
	rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Sample: 0.1, Seed: 1, Examples: 1000, Sweep: SweepCollections})
	require.Equal(t, rep.CollectionsSwept, rep.Totals.Stale)
	require.Less(t, rep.Totals.Stale, int64(100))
	require.Positive(t, rep.Totals.Stale)
	require.Zero(t, rep.Totals.Create+rep.Totals.Update)

	rep = run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Sample: 0.1, Seed: 1, Examples: 1000})
	require.EqualValues(t, 200, rep.Totals.Stale)
	require.EqualValues(t, 200, rep.StaleCollections)
	require.Zero(t, rep.Totals.Create+rep.Totals.Update)
}

// failingTarget fails Query or Scan for one collection, or every
// BatchGetItem.
type failingTarget struct {
	*fakeTable
	failGet   bool
	failQuery string
	failScan  bool
}

func (f *failingTarget) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	if f.failGet {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no such table")}
	}
	return f.fakeTable.BatchGetItem(ctx, in, o...)
}

func (f *failingTarget) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if avText(in.ExpressionAttributeValues[":pk"]) == f.failQuery {
		return nil, errors.New("connection reset")
	}
	return f.fakeTable.Query(ctx, in, o...)
}

func (f *failingTarget) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if f.failScan && in.ExclusiveStartKey != nil {
		return nil, errors.New("connection reset")
	}
	return f.fakeTable.Scan(ctx, in, o...)
}

// A failure stops the run with an error that names the table, without
// leaving the merge waiting on a worker that quit (a large collection
// streams in several chunks).
func TestRunStopsOnTargetErrors(t *testing.T) {
	p := compile(t, hostsMapping, hostsTables)
	snap := hostsSource(2, 3*chunkKeys)
	tbl := newFakeTable("S")
	tbl.pageSize = 1000
	migrate(t, p, snap, tbl)
	for _, tt := range []struct {
		name   string
		target *failingTarget
		sweep  Sweep
		want   string
	}{
		{"lookup", &failingTarget{fakeTable: tbl, failGet: true}, SweepTable, "reading table things"},
		{"collections sweep", &failingTarget{fakeTable: tbl, failQuery: "G#1"}, SweepCollections, "querying collection PK=G#1 of table things: connection reset"},
		{"table sweep", &failingTarget{fakeTable: tbl, failScan: true}, SweepTable, "scanning the keys of table things (segment 0 of 1): connection reset"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), Input{Plan: p, Snapshot: snap, Target: tt.target}, Options{Lookups: 1, Readers: 1, Sweep: tt.sweep, TempDir: t.TempDir(), Sleep: noSleep})
			require.ErrorContains(t, err, tt.want)
		})
	}
}
