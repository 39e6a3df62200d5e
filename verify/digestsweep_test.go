package verify

import (
	"bytes"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

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
