package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// fakeSnapshot serves rows (id, group) for ids 0..n-1 from memory.
type fakeSnapshot struct {
	n int64
	// failEvery makes every k-th Read fail after some rows, as if the
	// connection were killed.
	failEvery int64
	reads     atomic.Int64
	// estimate, when set, is what Count answers instead of n; group, when
	// set, gives the second column instead of id % 37.
	estimate int64
	group    func(id int64) int64
}

func (f *fakeSnapshot) Shards(_ context.Context, _ *source.Query, n int) ([]source.Range, error) {
	return source.IntShards(0, f.n-1, n), nil
}

func (f *fakeSnapshot) Count(context.Context, *source.Query, source.Range, bool) (int64, error) {
	if f.estimate > 0 {
		return f.estimate, nil
	}
	return f.n, nil
}

type lostConnection struct{}

func (lostConnection) Error() string { return "connection reset" }

// ReadNested implements source.Snapshot; the fake has no nested tables.
func (f *fakeSnapshot) ReadNested(context.Context, *source.Query, []*source.Query, source.Range, []value.Value, int, func(value.Row, [][]value.Row) error) error {
	return errors.New("fake snapshot: no nested reads")
}

func (f *fakeSnapshot) Read(ctx context.Context, _ *source.Query, r source.Range, after []value.Value, _ int, emit func(value.Row) error) error {
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
	call := f.reads.Add(1)
	for id := lo; id < hi; id++ {
		if f.failEvery > 0 && call%f.failEvery == 0 && id == lo+3 {
			return lostConnection{}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		grp := id % 37
		if f.group != nil {
			grp = f.group(id)
		}
		if err := emit(value.Row{value.IntValue(id), value.IntValue(grp)}); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeSnapshot) Info() source.SnapshotInfo { return source.SnapshotInfo{Note: "fake"} }
func (f *fakeSnapshot) Retryable(err error) bool  { _, ok := err.(lostConnection); return ok }
func (f *fakeSnapshot) Close() error              { return nil }

// fakeSink acknowledges items after a random delay, sometimes only some of
// a batch, and records every write.
type fakeSink struct {
	sink.AcksOnWrite
	mu      sync.Mutex
	written map[string]int
	rng     *rand.Rand
	stats   sink.Stats
	// stopAfter cancels the run (like a signal) after this many items.
	stopAfter int
	stop      func()
}

func newFakeSink(seed uint64) *fakeSink {
	return &fakeSink{written: map[string]int{}, rng: rand.New(rand.NewPCG(seed, 7))}
}

func (f *fakeSink) Write(ctx context.Context, batch []*mapping.Item, res sink.Results) error {
	pending := batch
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		f.mu.Lock()
		cut := len(pending)
		if f.rng.IntN(3) == 0 {
			cut = f.rng.IntN(len(pending) + 1) // a partial answer
		}
		delay := time.Duration(f.rng.IntN(300)) * time.Microsecond
		f.mu.Unlock()
		time.Sleep(delay)
		done, left := pending[:cut], pending[cut:]
		f.mu.Lock()
		for _, it := range done {
			f.written[it.Key]++
		}
		f.stats.Items += int64(len(done))
		var stop func()
		if f.stopAfter > 0 && len(f.written) >= f.stopAfter {
			stop, f.stop = f.stop, nil
		}
		f.mu.Unlock()
		if len(done) > 0 {
			res.Acked(done)
		}
		if len(left) > 0 {
			res.Retried(left, true)
		}
		pending = left
		if stop != nil {
			stop()
		}
	}
	return nil
}

func (f *fakeSink) Stats() sink.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func testPlan(t *testing.T) *mapping.Plan {
	t.Helper()
	cfg, err := mapping.Parse([]byte(`
version: 1
source: {driver: postgres}
target: {table: things, key: {pk: PK, sk: SK}}
entities:
  thing:
    from: things
    key: {pk: "G#${grp}"}
    items:
      a: {key: {sk: "A#${id|pad:8}"}}
      b: {key: {sk: "B#${id|pad:8}"}}
`))
	require.NoError(t, err)
	schema := &mapping.Schema{Tables: map[source.TableRef]*source.Table{{Name: "things"}: {
		Ref: source.TableRef{Name: "things"}, PrimaryKey: []string{"id"},
		Columns: []source.Column{{Name: "id", Kind: value.Int}, {Name: "grp", Kind: value.Int}},
	}}}
	p, err := mapping.Compile(cfg, schema, mapping.Options{})
	require.NoError(t, err)
	return p
}

func job(p *mapping.Plan, snap source.Snapshot, s sink.Sink, store checkpoint.Store) Job {
	return Job{Plan: p, Snapshot: snap, Sink: s, Store: store, Meta: checkpoint.Meta{Fingerprint: "fp", Table: "things"}}
}

func TestRunWritesEveryItemOnce(t *testing.T) {
	const rows = 5000
	snap := &fakeSnapshot{n: rows, failEvery: 4}
	s := newFakeSink(1)
	store := checkpoint.NewMemoryStore()
	sum, err := Run(context.Background(), job(testPlan(t), snap, s, store), Options{Readers: 3, Writers: 4, PageSize: 100})
	require.NoError(t, err)
	require.Len(t, s.written, 2*rows)
	for k, n := range s.written {
		require.Equal(t, 1, n, "item %q written %d times", k, n)
	}
	require.EqualValues(t, rows, sum.Total.RowsRead, "reconnections resume after the last row: nothing read twice")
	require.EqualValues(t, 2*rows, sum.Total.ItemsWritten)
	require.EqualValues(t, rows, sum.Total.CheckpointRows)
	require.EqualValues(t, 2*rows, sum.Total.CheckpointItems)
	require.Greater(t, sum.Total.ReadRetries, int64(0))
	require.Equal(t, sum.Total.Shards, int(sum.Total.ShardsDone))
}

// Stop the run part way, as a signal would, then resume from the saved
// checkpoint: together the runs write every item, and the resumed run does
// not read again what the first had acknowledged.
func TestRunStopsAndResumes(t *testing.T) {
	const rows = 20000
	path := t.TempDir() + "/ck.json"
	p := testPlan(t)
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			stop := make(chan struct{})
			s := newFakeSink(seed)
			var once sync.Once
			s.stopAfter, s.stop = rows/2, func() { once.Do(func() { close(stop) }) }
			first, err := Run(context.Background(), job(p, &fakeSnapshot{n: rows}, s, checkpoint.NewFileStore(path)),
				Options{Readers: 4, Writers: 4, PageSize: 250, Stop: stop, Grace: 50 * time.Millisecond})
			require.ErrorIs(t, err, ErrInterrupted)
			require.True(t, first.Interrupted)
			require.Less(t, first.Total.CheckpointRows, int64(rows))

			s2 := newFakeSink(seed + 100)
			second, err := Run(context.Background(), job(p, &fakeSnapshot{n: rows}, s2, checkpoint.NewFileStore(path)),
				Options{Readers: 4, Writers: 4, PageSize: 250})
			require.NoError(t, err)
			require.True(t, second.Resumed)
			for k := range s2.written {
				s.written[k]++
			}
			require.Len(t, s.written, 2*rows, "every item written by one run or the other")
			require.EqualValues(t, rows, second.Total.CheckpointRows, "checkpoint counters add up across runs")
			require.LessOrEqual(t, first.Total.CheckpointRows+second.Total.RowsRead, int64(rows)+first.Total.RowsRead)
			require.NoError(t, checkpoint.NewFileStore(path).Discard(context.Background()))
		})
	}
}

// thingsPlan maps table things (id, grp) to one item per row keyed by
// grp: rows of one grp collide.
func thingsPlan(t *testing.T) *mapping.Plan {
	t.Helper()
	cfg, err := mapping.Parse([]byte(`
version: 1
source: {driver: postgres}
target: {table: things, key: {pk: PK, sk: SK}}
entities:
  thing:
    from: things
    key: {pk: "G", sk: "T#${grp}"}
`))
	require.NoError(t, err)
	schema := &mapping.Schema{Tables: map[source.TableRef]*source.Table{{Name: "things"}: {
		Ref: source.TableRef{Name: "things"}, PrimaryKey: []string{"id"},
		Columns: []source.Column{{Name: "id", Kind: value.Int}, {Name: "grp", Kind: value.Int}},
	}}}
	p, err := mapping.Compile(cfg, schema, mapping.Options{})
	require.NoError(t, err)
	return p
}

// Two rows producing one key: the filter flags the second, the re-read
// finds both producers, and the error names both rows.
func TestRunReportsKeyCollisions(t *testing.T) {
	p := thingsPlan(t)
	// ids 0..39 with grp = id % 37: ids 37, 38, 39 collide with 0, 1, 2.
	_, err := Run(context.Background(), job(p, &fakeSnapshot{n: 40}, newFakeSink(1), checkpoint.NewMemoryStore()), Options{Readers: 1, Writers: 1})
	var rerr *mapping.RowError
	require.ErrorAs(t, err, &rerr)
	require.Contains(t, err.Error(), "key collision: item key (PK \"G\", SK \"T#")
	// Builders run in parallel, so either row of a pair may be the one held.
	m := regexp.MustCompile(`entity thing, row id=(\d+): key collision: item key \(PK "G", SK "T#(\d+)"\) is also produced by entity thing, row id=(\d+)`).FindStringSubmatch(err.Error())
	require.NotNil(t, m, err.Error())
	a, _ := strconv.Atoi(m[1])
	grp, _ := strconv.Atoi(m[2])
	b, _ := strconv.Atoi(m[3])
	require.ElementsMatch(t, []int{grp, grp + 37}, []int{a, b}, "the two rows whose grp is %d", grp)
}

func TestRunRejectPolicyWritesRejectFile(t *testing.T) {
	cfg, err := mapping.Parse([]byte(`
version: 1
source: {driver: postgres}
target: {table: things, key: {pk: PK, sk: SK}}
entities:
  thing:
    from: things
    on_error: reject
    key: {pk: "G#${grp}", sk: "T#${id|pad:2}"}
`))
	require.NoError(t, err)
	schema := &mapping.Schema{Tables: map[source.TableRef]*source.Table{{Name: "things"}: {
		Ref: source.TableRef{Name: "things"}, PrimaryKey: []string{"id"},
		Columns: []source.Column{{Name: "id", Kind: value.Int}, {Name: "grp", Kind: value.Int}},
	}}}
	p, err := mapping.Compile(cfg, schema, mapping.Options{})
	require.NoError(t, err)
	rejects := t.TempDir() + "/rejects.jsonl"
	s := newFakeSink(3)
	sum, err := Run(context.Background(), job(p, &fakeSnapshot{n: 150}, s, checkpoint.NewMemoryStore()), Options{RejectFile: rejects})
	require.NoError(t, err)
	require.EqualValues(t, 50, sum.Total.Rejected, "ids 100..149 have more than 2 digits")
	require.Len(t, s.written, 100)
	require.Equal(t, rejects, sum.RejectFile)

	_, err = Run(context.Background(), job(p, &fakeSnapshot{n: 150}, newFakeSink(3), checkpoint.NewMemoryStore()),
		Options{RejectFile: rejects, MaxRejects: 10, MaxRejectsSet: true})
	require.ErrorContains(t, err, "more than --max-rejects 10")
}

// gaveUpSink acknowledges the first batches, then gives up as the DynamoDB
// writer does after its retries.
type gaveUpSink struct {
	fakeSink
	batches atomic.Int64
}

func (g *gaveUpSink) Write(ctx context.Context, batch []*mapping.Item, res sink.Results) error {
	if g.batches.Add(1) > 20 {
		return fmt.Errorf("writing to table things: %w after 12 attempts: throttled", sink.ErrGaveUp)
	}
	return g.fakeSink.Write(ctx, batch, res)
}

// A table that keeps refusing writes past the retries stops the run
// resumably: the checkpoint holds what was acknowledged, and the next run
// completes the rest.
func TestRunStopsResumablyWhenTheTableGivesOut(t *testing.T) {
	const rows = 5000
	p := testPlan(t)
	path := t.TempDir() + "/ck.json"
	g := &gaveUpSink{fakeSink: *newFakeSink(3)}
	first, err := Run(context.Background(), job(p, &fakeSnapshot{n: rows}, g, checkpoint.NewFileStore(path)), Options{Readers: 2, Writers: 2, PageSize: 100})
	var resumable *ResumableError
	require.ErrorAs(t, err, &resumable)
	require.ErrorIs(t, err, sink.ErrGaveUp)
	require.Less(t, first.Total.CheckpointRows, int64(rows))

	s := newFakeSink(4)
	second, err := Run(context.Background(), job(p, &fakeSnapshot{n: rows}, s, checkpoint.NewFileStore(path)), Options{Readers: 2, Writers: 2, PageSize: 100})
	require.NoError(t, err)
	require.True(t, second.Resumed)
	require.EqualValues(t, rows, second.Total.CheckpointRows)
	for k := range g.written {
		s.written[k]++
	}
	require.Len(t, s.written, 2*rows, "every item written by one run or the other")
}
