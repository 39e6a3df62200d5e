package verify

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/value"
)

// deleteGroup removes group g and its hosts from the source, as deleting a
// customer with its orders does: no row produces collection G#g any more.
func deleteGroup(snap *fakeSnapshot, g int64) {
	var groups, hosts []value.Row
	for _, r := range snap.rows["groups"] {
		if r[0].I != g {
			groups = append(groups, r)
		}
	}
	for _, r := range snap.rows["hosts"] {
		if r[1].I != g {
			hosts = append(hosts, r)
		}
	}
	snap.rows["groups"], snap.rows["hosts"] = groups, hosts
}

// A collection whose rows were all deleted is found by the table sweep as
// one stale collection, counted per entity, with its first keys; items the
// mapping does not recognise are counted and left alone. The collections
// sweep does not see it.
func TestTableSweepGroupsStaleItemsByCollection(t *testing.T) {
	p := compile(t, hostsMapping, hostsTables)
	snap := hostsSource(3, 40) // G#2 holds the group and 14 hosts
	tbl := newFakeTable("S")
	migrate(t, p, snap, tbl)
	deleteGroup(snap, 2)
	tbl.put(map[string]types.AttributeValue{"PK": s("G#2"), "SK": s("NOTE#1"), "Text": s("no type")})
	tbl.put(map[string]types.AttributeValue{"PK": s("G#2"), "SK": s("X#1"), "_type": s("invoice")})
	stale := []StaleKey{{Entity: "group", SK: sp("GROUP")}, {Entity: "host", SK: sp("HOST#000001")}, {Entity: "host", SK: sp("HOST#000004")},
		{Entity: "host", SK: sp("HOST#000007")}, {Entity: "host", SK: sp("HOST#000010")}}

	for _, tt := range []struct {
		name  string
		opts  Options
		stale int64
	}{
		{"diff, table sweep", Options{Mode: ModeDiff}, 15},
		{"diff, collections sweep", Options{Mode: ModeDiff, Sweep: SweepCollections}, 0},
		{"key sweep", Options{Mode: ModePrune, KeyOnly: true, DryRun: true}, 15},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, tt.opts)
			require.Equal(t, tt.stale, rep.Totals.Stale)
			if tt.stale == 0 {
				require.Zero(t, rep.StaleCollections)
				require.Empty(t, rep.StaleByCollection)
				require.Zero(t, rep.OtherItems, "the collections sweep never reads G#2")
				return
			}
			require.EqualValues(t, 1, rep.StaleCollections)
			require.Equal(t, []StaleCollection{{PK: "G#2", Items: 15,
				Entities: []EntityStale{{Entity: "group", Items: 1}, {Entity: "host", Items: 14}}, Examples: stale}}, rep.StaleByCollection)
			require.EqualValues(t, 2, rep.OtherItems, "an item without a type and one of another type")
			require.EqualValues(t, len(tbl.items), rep.KeysScanned)
		})
	}

	rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: ModePrune, Delete: tbl})
	require.EqualValues(t, 15, rep.Deleted)
	require.NotNil(t, tbl.get("G#2", "NOTE#1"), "an item without a type is never deleted")
	require.NotNil(t, tbl.get("G#2", "X#1"), "an item of another type is never deleted")
	require.Nil(t, tbl.get("G#2", "GROUP"))
	rep = run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: ModeVerify})
	require.True(t, rep.InSync)
	require.EqualValues(t, 2, rep.OtherItems)
}

// A budget far smaller than the keys makes both sides spill to sorted
// runs; the result is the same as in memory, and the runs are removed.
func TestTableSweepSpillsPastTheBudget(t *testing.T) {
	p := compile(t, hostsMapping, hostsTables)
	snap := hostsSource(20, 2000)
	tbl := newFakeTable("S")
	tbl.pageSize = 100
	migrate(t, p, snap, tbl)
	deleteGroup(snap, 5)
	for g := 1; g <= 20; g += 3 {
		tbl.put(map[string]types.AttributeValue{"PK": s(fmt.Sprintf("G#%d", g)), "SK": s("HOST#999999"), "_type": s("host")})
		tbl.put(map[string]types.AttributeValue{"PK": s(fmt.Sprintf("G#%d", g)), "SK": s("NOTE#1")})
	}
	var reports []*Report
	for _, tt := range []struct {
		name   string
		budget int
		spills bool
	}{
		{"in memory", 64 << 20, false},
		{"spilled", 2000, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rep, err := Run(t.Context(), Input{Plan: p, Snapshot: snap, Target: tbl},
				Options{Mode: ModeDiff, SpillBytes: tt.budget, TempDir: dir, Readers: 3, Sleep: noSleep})
			require.NoError(t, err)
			require.Equal(t, tt.spills, rep.KeysSpilled > 0, "keys spilled: %d", rep.KeysSpilled)
			left, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, left, "the runs are removed")
			require.EqualValues(t, 1+100+7, rep.Totals.Stale, "G#5 whole, and one host in each of 7 collections")
			require.EqualValues(t, 7, rep.OtherItems)
			rep.Seconds, rep.KeysSpilled = 0, 0
			reports = append(reports, rep)
		})
	}
	require.Len(t, reports, 2)
	require.Equal(t, reports[0], reports[1])
}

// An item of an entity read through a where: filter, in a collection no
// row produces, is counted as outside the filter and left alone.
func TestTableSweepCountsItemsOutsideTheFilter(t *testing.T) {
	p := compile(t, hostsMapping+"    where: \"grp > 0\"\n", hostsTables)
	require.True(t, p.Entities[1].Filtered())
	snap := hostsSource(3, 40)
	tbl := newFakeTable("S")
	migrate(t, p, snap, tbl)
	deleteGroup(snap, 2)
	rep := run(t, Input{Plan: p, Snapshot: snap, Target: tbl}, Options{Mode: ModePrune, Delete: tbl})
	require.EqualValues(t, 1, rep.Deleted, "the group's own item: groups are not filtered")
	require.EqualValues(t, 14, rep.OutsideFilter)
	require.NotNil(t, tbl.get("G#2", "HOST#000001"))
}

// groupSet keeps the first collections by partition key, whatever order
// the sweep workers hand them over in.
func TestGroupSetKeepsTheFirstCollectionsByKey(t *testing.T) {
	for _, tt := range []struct {
		name  string
		limit int
		add   int
		want  []string
	}{
		{"fewer than the limit", 5, 3, []string{"c000", "c001", "c002"}},
		{"more than the limit", 3, 50, []string{"c000", "c001", "c002"}},
		{"none wanted", 0, 10, []string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &groupSet{limit: tt.limit}
			for _, i := range rand.Perm(tt.add) {
				s.add(StaleCollection{PK: fmt.Sprintf("c%03d", i)})
			}
			got := []string{}
			for _, sc := range s.list() {
				got = append(got, sc.PK)
			}
			require.Equal(t, tt.want, got)
		})
	}
}
