package verify

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// memDigests keeps digests in memory: a DigestSink, and a DigestSource
// through source().
type memDigests struct {
	pks  [][]byte
	sums []uint64
}

func (m *memDigests) Add(pk []byte, sum uint64) error {
	if n := len(m.pks); n > 0 && bytes.Compare(m.pks[n-1], pk) >= 0 {
		panic("digests out of order")
	}
	m.pks, m.sums = append(m.pks, append([]byte(nil), pk...)), append(m.sums, sum)
	return nil
}

func (m *memDigests) source() DigestSource { return &memDigestSource{m: m} }

type memDigestSource struct {
	m *memDigests
	i int
}

func (s *memDigestSource) Next() ([]byte, uint64, bool, error) {
	if s.i >= len(s.m.pks) {
		return nil, 0, false, nil
	}
	s.i++
	return s.m.pks[s.i-1], s.m.sums[s.i-1], true, nil
}

// A scan sweep records one digest per collection; a digest sweep then
// queries only the collections whose keys changed, that vanished or that
// were written, and finds there what the scan would.
func TestDigestSweepQueriesOnlyChangedCollections(t *testing.T) {
	p := compile(t, hostsMapping, hostsTables)
	tbl := &scanTable{fakeTable: newFakeTable("S")}
	tbl.pageSize = 2
	migrate(t, p, hostsSource(4, 40), tbl.fakeTable)
	first := &memDigests{}
	rep := run(t, Input{Plan: p, Snapshot: hostsSource(4, 40), Target: tbl}, Options{Mode: ModePrune, KeyOnly: true, Delete: tbl, Digests: &Digests{Next: first}})
	require.Equal(t, SweepScan, rep.SweepMode)
	require.EqualValues(t, 4, rep.Collections)
	require.Len(t, first.pks, 4)

	// Nothing changed: nothing is read from the table, and the digests
	// come out the same.
	tbl.queries.Store(0)
	same := &memDigests{}
	rep = run(t, Input{Plan: p, Snapshot: hostsSource(4, 40), Target: tbl}, Options{Mode: ModePrune, KeyOnly: true, Delete: tbl, Digests: &Digests{Previous: first.source(), Next: same}})
	require.Equal(t, SweepQuery, rep.SweepMode)
	require.Zero(t, rep.CollectionsQueried)
	require.Zero(t, tbl.queries.Load())
	require.Equal(t, first, same)

	// Host 40 (group 1) gone, group 4 and its hosts gone, and a stray
	// host item in group 3 that this run "wrote": groups 1 (changed), 4
	// (vanished) and 3 (written) are queried, group 2 is not.
	tbl.put(map[string]types.AttributeValue{"PK": s("G#3"), "SK": s("HOST#999999"), "_type": s("host")})
	tbl.put(map[string]types.AttributeValue{"PK": s("G#2"), "SK": s("HOST#999999"), "_type": s("host")})
	snap := hostsSource(4, 40)
	snap.rows["groups"] = snap.rows["groups"][:3]
	var hosts []value.Row
	for _, r := range snap.rows["hosts"] {
		if id, grp := r[0].Text(), r[1].Text(); id != "40" && grp != "4" {
			hosts = append(hosts, r)
		}
	}
	snap.rows["hosts"] = hosts
	tbl.queries.Store(0)
	next := &memDigests{}
	rep = run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: ModePrune, KeyOnly: true, Delete: tbl,
		Digests: &Digests{Previous: first.source(), Next: next, Written: []types.AttributeValue{s("G#3")}}})
	require.Equal(t, SweepQuery, rep.SweepMode)
	require.EqualValues(t, 3, rep.Collections)
	require.EqualValues(t, 1, rep.CollectionsChanged)
	require.EqualValues(t, 1, rep.CollectionsVanished)
	require.EqualValues(t, 3, rep.CollectionsQueried)
	require.Nil(t, tbl.get("G#1", "HOST#000040"))
	require.Nil(t, tbl.get("G#4", "GROUP"), "a vanished collection is swept")
	require.Nil(t, tbl.get("G#3", "HOST#999999"), "a written collection is swept")
	require.NotNil(t, tbl.get("G#2", "HOST#999999"), "an unchanged collection is not read")
	require.Len(t, next.pks, 3)
	// Groups 1 (11 items), 3 (11 and the stray) and 4 (11) were read.
	require.EqualValues(t, 34, rep.TargetKeysRead)
	require.EqualValues(t, 13, rep.Deleted)
	require.True(t, rep.InSync)
}

// A digest sweep keeps the scan's safety for filtered entities: in a
// vanished collection (no row makes it), only the unfiltered entities'
// items are deleted.
func TestDigestSweepSparesFilteredEntitiesInVanishedCollections(t *testing.T) {
	p := compile(t, strings.Replace(hostsMapping, "    from: hosts\n", "    from: hosts\n    where: \"grp > 0\"\n", 1), hostsTables)
	tbl := &scanTable{fakeTable: newFakeTable("S")}
	migrate(t, p, hostsSource(3, 30), tbl.fakeTable)
	first := &memDigests{}
	run(t, Input{Plan: p, Snapshot: hostsSource(3, 30), Target: tbl}, Options{Mode: ModePrune, KeyOnly: true, Delete: tbl, Digests: &Digests{Next: first}})

	// Group 3's row and its hosts are no longer read (as when the filter
	// stops selecting them): the source no longer makes collection G#3.
	snap := hostsSource(3, 30)
	snap.rows["groups"] = snap.rows["groups"][:2]
	var hosts []value.Row
	for _, r := range snap.rows["hosts"] {
		if r[1].Text() != "3" {
			hosts = append(hosts, r)
		}
	}
	snap.rows["hosts"] = hosts
	rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: ModePrune, KeyOnly: true, Delete: tbl, Digests: &Digests{Previous: first.source()}})
	require.Equal(t, SweepQuery, rep.SweepMode)
	require.EqualValues(t, 1, rep.CollectionsVanished)
	require.EqualValues(t, 1, rep.CollectionsQueried)
	require.EqualValues(t, 1, rep.Deleted)
	require.Nil(t, tbl.get("G#3", "GROUP"), "groups are not filtered")
	require.NotNil(t, tbl.get("G#3", "HOST#000002"), "a filtered entity's item in a collection no row makes stays")
}

// Numeric sort keys read by a query merge with the expected keys in the
// same framing as the scan's.
func TestDigestSweepNumericSortKeys(t *testing.T) {
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
	readings := func(vals ...string) *fakeSnapshot {
		snap := &fakeSnapshot{rows: map[string][]value.Row{}}
		for i, v := range vals {
			snap.rows["readings"] = append(snap.rows["readings"], value.Row{value.IntValue(int64(i)), value.DecimalValue(v)})
		}
		return snap
	}
	vals := []string{"-100", "-1.5", "-0.25", "0", "0.001", "2", "10", "10.5", "1e3"}
	tbl := &scanTable{fakeTable: newFakeTable("N")}
	migrate(t, p, readings(vals...), tbl.fakeTable)
	first := &memDigests{}
	run(t, Input{Plan: p, Snapshot: readings(vals...), Target: tbl}, Options{Mode: ModePrune, KeyOnly: true, Delete: tbl, Digests: &Digests{Next: first}})
	stale := []string{"-1000", "-1", "1", "9", "11", "100000"}
	for _, v := range stale {
		tbl.put(map[string]types.AttributeValue{"PK": s("R"), "SK": n(v), "_type": s("reading")})
	}
	// Reading 2 deleted: the collection's keys changed.
	rep := run(t, Input{Plan: p, Snapshot: readings(append(vals[:5:5], vals[6:]...)...), Target: tbl},
		Options{Mode: ModePrune, KeyOnly: true, Delete: tbl, Digests: &Digests{Previous: first.source()}})
	require.Equal(t, SweepQuery, rep.SweepMode)
	require.EqualValues(t, len(stale)+1, rep.Deleted)
	require.Nil(t, tbl.get("R", "2"))
	require.Len(t, tbl.items, 8)
}
