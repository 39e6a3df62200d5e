package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// nestedSnapshot serves parents (id) 0..n-1, each with children (id, seq,
// v) for seq 0..kids-1.
type nestedSnapshot struct {
	fakeSnapshot
	kids int
}

func (f *nestedSnapshot) ReadNested(ctx context.Context, _ *source.Query, _ []*source.Query, r source.Range, after []value.Value, _ int, emit func(value.Row, [][]value.Row) error) error {
	lo, hi := int64(0), f.n
	if r.Lo != nil {
		lo = r.Lo.I
	}
	if r.Hi != nil {
		hi = min(r.Hi.I, f.n)
	}
	if after != nil {
		lo = max(lo, after[0].I+1)
	}
	for id := lo; id < hi; id++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		kids := make([]value.Row, f.kids)
		for s := range kids {
			kids[s] = value.Row{value.IntValue(id), value.IntValue(int64(s)), value.IntValue(id*1000 + int64(s))}
		}
		if err := emit(value.Row{value.IntValue(id)}, [][]value.Row{kids}); err != nil {
			return err
		}
	}
	return nil
}

// orderSink acknowledges items in random subsets after random delays,
// refuses the items whose sort key is in refuse, and deletes on Remove. It
// records, for every head it is handed, whether all the head's parts were
// acknowledged (and not deleted) at that moment.
type orderSink struct {
	sink.AcksOnWrite
	mu       sync.Mutex
	rng      *rand.Rand
	table    map[string]bool // keys present
	refuse   map[string]bool
	early    []string // heads handed over before all their parts were present
	removed  []string // keys deleted, in order
	headSeen map[string]bool
}

func (s *orderSink) Write(ctx context.Context, batch []*mapping.Item, res sink.Results) error {
	s.mu.Lock()
	for _, it := range batch {
		if it.SplitParts > 0 {
			for p := 1; p <= it.SplitParts; p++ {
				if !s.table[fmt.Sprintf("%s#PART#%04d", it.Key, p)] {
					s.early = append(s.early, it.Key)
					break
				}
			}
		}
	}
	s.mu.Unlock()
	pending := batch
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.mu.Lock()
		cut := len(pending)
		if s.rng.IntN(2) == 0 {
			cut = s.rng.IntN(len(pending) + 1)
		}
		delay := time.Duration(s.rng.IntN(200)) * time.Microsecond
		s.mu.Unlock()
		time.Sleep(delay)
		var done []*mapping.Item
		for _, it := range pending[:cut] {
			s.mu.Lock()
			refuse := s.refuse[it.Key]
			if !refuse {
				s.table[it.Key] = true
			}
			s.mu.Unlock()
			if refuse {
				res.Rejected(it, fmt.Errorf("refused"))
				continue
			}
			done = append(done, it)
		}
		if len(done) > 0 {
			res.Acked(done)
		}
		if left := pending[cut:]; len(left) > 0 {
			res.Retried(left, true)
		}
		pending = pending[cut:]
	}
	return nil
}

func (s *orderSink) Remove(_ context.Context, items []*mapping.Item) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range items {
		delete(s.table, it.Key)
		s.removed = append(s.removed, it.Key)
	}
	return nil
}

func (s *orderSink) Stats() sink.Stats { return sink.Stats{} }

// Under several writers acknowledging out of order and in parts, a head is
// handed to the sink only once all its parts are written; a row one of
// whose parts (or whose head) is refused has no head, and its written
// parts are deleted after the head's key.
func TestSplitHeadsWaitForTheirParts(t *testing.T) {
	cfg, err := mapping.Parse([]byte(`
version: 1
source: {driver: postgres}
target: {table: things, key: {pk: PK, sk: SK}, type_attribute: _type}
entities:
  thing:
    from: things
    on_error: reject
    key: {pk: "G#${id}", sk: "T"}
    nest:
      Kids:
        from: kids
        on: {parent: id}
        order_by: [seq]
        attributes: {s: seq, v: v}
        max_bytes: 600
        overflow: split
`))
	require.NoError(t, err)
	schema := &mapping.Schema{Tables: map[source.TableRef]*source.Table{
		{Name: "things"}: {Ref: source.TableRef{Name: "things"}, PrimaryKey: []string{"id"},
			Columns: []source.Column{{Name: "id", Kind: value.Int}}},
		{Name: "kids"}: {Ref: source.TableRef{Name: "kids"}, PrimaryKey: []string{"parent", "seq"}, Unique: [][]string{{"parent", "seq"}},
			Columns: []source.Column{{Name: "parent", Kind: value.Int}, {Name: "seq", Kind: value.Int}, {Name: "v", Kind: value.Int}}},
	}}
	p, err := mapping.Compile(cfg, schema, mapping.Options{})
	require.NoError(t, err)
	const rows, kids = 300, 120
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			// Rows 7, 150 and 299 have their second part refused, row 42
			// its head (after all its parts were written).
			refused := map[int]bool{7: true, 150: true, 299: true, 42: true}
			s := &orderSink{rng: rand.New(rand.NewPCG(seed, 9)), table: map[string]bool{}, refuse: map[string]bool{"G#42\x00T": true}}
			for _, id := range []int{7, 150, 299} {
				s.refuse[fmt.Sprintf("G#%d\x00T#PART#%04d", id, 2)] = true
			}
			sum, err := Run(context.Background(), job(p, &nestedSnapshot{fakeSnapshot: fakeSnapshot{n: rows}, kids: kids}, s, checkpoint.NewMemoryStore()),
				Options{Writers: 6, Builders: 3, Readers: 2})
			require.NoError(t, err)
			require.Empty(t, s.early, "heads handed over before their parts were written")
			require.EqualValues(t, len(refused), sum.Total.Rejected)
			parts := 0
			for id := range rows {
				head := fmt.Sprintf("G#%d\x00T", id)
				var partKeys []string
				for k := range s.table {
					if strings.HasPrefix(k, head+"#PART#") {
						partKeys = append(partKeys, k)
					}
				}
				if refused[id] {
					require.False(t, s.table[head], "row %d failed: no head", id)
					require.Empty(t, partKeys, "row %d failed: its parts are deleted", id)
					continue
				}
				require.True(t, s.table[head], "row %d", id)
				require.Greater(t, len(partKeys), 1, "row %d is split", id)
				parts = len(partKeys)
			}
			require.Positive(t, parts)
			require.Positive(t, sum.SplitPartsRemoved)
			// Each failed row's deletes begin with its head's key.
			for id := range refused {
				head := fmt.Sprintf("G#%d\x00T", id)
				first := -1
				for i, k := range s.removed {
					if k == head && first < 0 {
						first = i
					}
					if strings.HasPrefix(k, head+"#PART#") {
						require.True(t, first >= 0 && first < i, "row %d: the head's key is deleted before its parts", id)
					}
				}
			}
		})
	}
}
