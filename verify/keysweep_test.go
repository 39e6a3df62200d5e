package verify

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// scanTable is the fake table under the name the key-sweep tests knew it
// by, when Scan was theirs alone.
type scanTable struct {
	*fakeTable
}

// columnsSnapshot records the select lists it is asked to read.
type columnsSnapshot struct {
	*fakeSnapshot
	mu      sync.Mutex
	columns map[string][]string
}

func (s *columnsSnapshot) Read(ctx context.Context, q *source.Query, r source.Range, after []value.Value, n int, emit func(value.Row) error) error {
	s.mu.Lock()
	var cols []string
	for _, c := range q.Columns {
		cols = append(cols, c.Name)
	}
	s.columns[q.Base.Name] = cols
	s.mu.Unlock()
	return s.fakeSnapshot.Read(ctx, q, r, after, n, emit)
}

// The key sweep reads only the key columns and the table's keys, deletes
// stale items in touched collections and in collections no row makes any
// more, and leaves someone else's items alone.
func TestKeySweepDeletesStaleItemsAndEmptiedCollections(t *testing.T) {
	p := compile(t, hostsMapping, hostsTables)
	snap := &columnsSnapshot{fakeSnapshot: hostsSource(3, 40), columns: map[string][]string{}}
	tbl := &scanTable{fakeTable: newFakeTable("S")}
	migrate(t, p, snap.fakeSnapshot, tbl.fakeTable)
	tamper(tbl.fakeTable) // a stale host in G#1, a host in G#9 (no rows), a note in G#1
	for i := range 30 {   // more than one delete batch in one collection
		tbl.put(map[string]types.AttributeValue{"PK": s("G#2"), "SK": s(fmt.Sprintf("HOST#9%05d", i)), "_type": s("host")})
	}
	tbl.put(map[string]types.AttributeValue{"PK": s("G#9"), "SK": s("GROUP"), "_type": s("group"), "Name": s("gone")})
	size := len(tbl.items)

	rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: ModePrune, KeyOnly: true, Delete: tbl, Lookups: 3})
	require.True(t, rep.KeyOnly)
	require.EqualValues(t, size, rep.KeysScanned)
	require.EqualValues(t, 43, rep.Totals.RowsSeen)
	require.EqualValues(t, 33, rep.Deleted)
	require.EqualValues(t, 33, rep.Totals.Stale)
	require.True(t, rep.InSync)
	require.Nil(t, tbl.get("G#1", "HOST#999999"))
	require.Nil(t, tbl.get("G#9", "HOST#000001"), "a collection no row makes is swept")
	require.Nil(t, tbl.get("G#9", "GROUP"))
	require.NotNil(t, tbl.get("G#1", "NOTE#1"), "someone else's item stays")
	require.Zero(t, tbl.gets.Load()+tbl.queries.Load(), "the key sweep only scans")
	for _, proj := range tbl.projections {
		require.Equal(t, "PK, SK, _type", proj)
	}
	// hosts (id, grp, name, ram): the keys use id and grp; name and ram
	// are replaced by the key column.
	require.Equal(t, []string{"id", "grp", "id", "id"}, snap.columns["hosts"])
	require.Equal(t, []string{"id", "id"}, snap.columns["groups"])

	again := run(t, Input{Plan: p, Snapshot: snap.fakeSnapshot, Target: tbl}, Options{Mode: ModeDiff})
	require.Zero(t, again.Totals.Stale, "verify's own sweep finds nothing left")
}

// An entity read through a where: filter sweeps only the collections its
// rows make: the rest may be another tenant's.
func TestKeySweepSparesFilteredEntitiesUntouchedCollections(t *testing.T) {
	p := compile(t, strings.Replace(hostsMapping, "    from: hosts\n", "    from: hosts\n    where: \"grp > 0\"\n", 1), hostsTables)
	require.True(t, p.Entities[1].Filtered())
	require.False(t, p.Entities[0].Filtered())
	snap := hostsSource(3, 40)
	tbl := &scanTable{fakeTable: newFakeTable("S")}
	migrate(t, p, snap, tbl.fakeTable)
	tamper(tbl.fakeTable)
	tbl.put(map[string]types.AttributeValue{"PK": s("G#9"), "SK": s("GROUP"), "_type": s("group")})
	rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: ModePrune, KeyOnly: true, Delete: tbl})
	require.EqualValues(t, 2, rep.Deleted)
	require.Nil(t, tbl.get("G#1", "HOST#999999"), "a touched collection is swept")
	require.Nil(t, tbl.get("G#9", "GROUP"), "groups are not filtered")
	require.NotNil(t, tbl.get("G#9", "HOST#000001"), "a filtered entity's item in an untouched collection stays")
}

// Numeric sort keys are framed so that the target's records merge with
// the expected ones in the same order.
func TestKeySweepNumericSortKeys(t *testing.T) {
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
	tbl := &scanTable{fakeTable: newFakeTable("N")}
	migrate(t, p, snap, tbl.fakeTable)
	stale := []string{"-1000", "-1", "1", "9", "11", "100000"}
	for _, v := range stale {
		tbl.put(map[string]types.AttributeValue{"PK": s("R"), "SK": n(v), "_type": s("reading")})
	}
	rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: ModePrune, KeyOnly: true, Delete: tbl})
	require.EqualValues(t, len(stale), rep.Deleted)
	for _, v := range stale {
		require.Nil(t, tbl.get("R", v), v)
	}
	require.Len(t, tbl.items, 9)
}

func TestKeyRecordFramesSortKeys(t *testing.T) {
	k := keySchema{pk: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}, sk: &mapping.KeyAttr{Name: "SK", Type: mapping.TypeS}}
	a, _ := k.keyRecord(nil, map[string]types.AttributeValue{"PK": s("A"), "SK": s("X")})
	b, _ := k.keyRecord(nil, map[string]types.AttributeValue{"PK": s("A"), "SK": s("X\x00")})
	c, _ := k.keyRecord(nil, map[string]types.AttributeValue{"PK": s("A"), "SK": s("XY")})
	require.Less(t, string(a), string(b))
	require.Less(t, string(b), string(c))
	rec := append(append([]byte(nil), b...), 0, 5)
	rec = append(rec, "X\x00"...)
	key, ent, raw := k.splitTargetRecord(rec)
	require.Equal(t, b, key)
	require.Equal(t, 5, ent)
	require.Equal(t, map[string]types.AttributeValue{"PK": s("A"), "SK": s("X\x00")}, k.decodeKey(key, raw))
}
