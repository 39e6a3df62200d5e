// Package statestoretest is the conformance suite every statestore.Store
// passes: it reads its own writes; a state document (the confirmed
// position) is never durable before the row-index writes made before it,
// so that a crash between any two calls leaves a state that resumes
// correctly; and a round costs a bounded number of requests, batched, not
// one per row.
package statestoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/statestore"
	"github.com/dynafold/dynafold/value"
)

// Subject is one store's backing under test, empty when given.
type Subject struct {
	// Open opens a store over the backing. A store opened after another
	// was closed sees what that one made durable, as a sync started after
	// a crash does.
	Open func(t *testing.T) statestore.Store
	// Requests counts the requests made to the backing so far (DynamoDB
	// requests; file operations).
	Requests func() int64
}

// Run runs the suite; fresh returns a new, empty backing for each case.
func Run(t *testing.T, fresh func(t *testing.T) Subject) {
	ctx := context.Background()
	t.Run("ReadsItsOwnWrites", func(t *testing.T) {
		s := fresh(t)
		st := s.Open(t)
		doc, err := st.ReadState(ctx)
		require.NoError(t, err)
		require.Nil(t, doc, "an empty store has no state")
		require.NoError(t, st.WriteState(ctx, []byte(`{"confirmed":"0/1"}`)))
		doc, err = st.ReadState(ctx)
		require.NoError(t, err)
		require.Equal(t, `{"confirmed":"0/1"}`, string(doc))

		rows := [][]byte{[]byte("r1"), {0, 1, 2, 0xff}, []byte("r3")}
		keys := []string{"PK#1\x00SK#1", "PK#1\x00SK#1#PART#0001", "", "with\x00nul\x00s"}
		require.NoError(t, st.SetKeys(ctx, []statestore.Entry{
			{Entity: "e", Row: rows[0], Keys: keys},
			{Entity: "e", Row: rows[1], Keys: []string{"b"}},
			{Entity: "other", Row: rows[0], Keys: []string{"o"}},
		}))
		got, err := st.Keys(ctx, "e", rows)
		require.NoError(t, err)
		require.Equal(t, [][]string{keys, {"b"}, nil}, nilEmpty(got))
		// No keys removes the row.
		require.NoError(t, st.SetKeys(ctx, []statestore.Entry{{Entity: "e", Row: rows[1]}}))
		got, err = st.Keys(ctx, "e", rows[1:2])
		require.NoError(t, err)
		require.Empty(t, got[0])
		got, err = st.Keys(ctx, "other", rows[:1])
		require.NoError(t, err)
		require.Equal(t, []string{"o"}, got[0])

		// What was written survives a reopen.
		require.NoError(t, st.Close())
		st = s.Open(t)
		defer st.Close()
		doc, err = st.ReadState(ctx)
		require.NoError(t, err)
		require.Equal(t, `{"confirmed":"0/1"}`, string(doc))
		got, err = st.Keys(ctx, "e", rows[:1])
		require.NoError(t, err)
		require.Equal(t, keys, got[0])

		require.NoError(t, st.ClearKeys(ctx))
		got, err = st.Keys(ctx, "e", rows)
		require.NoError(t, err)
		require.Equal(t, [][]string{nil, nil, nil}, nilEmpty(got))
		got, err = st.Keys(ctx, "other", rows[:1])
		require.NoError(t, err)
		require.Empty(t, got[0])
	})

	t.Run("KeepsTheLoadCheckpoint", func(t *testing.T) {
		s := fresh(t)
		st := s.Open(t)
		meta := checkpoint.Meta{Fingerprint: "f1", Table: "t", Source: "s", RunID: "r"}
		load := st.Load()
		resumed, err := load.Open(ctx, meta, false)
		require.NoError(t, err)
		require.False(t, resumed)
		shards, err := load.Plan(ctx, "e", func() ([]source.Range, error) { return []source.Range{{}, {}}, nil })
		require.NoError(t, err)
		require.Len(t, shards, 2)
		sh, ok, err := load.Claim(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		load.Advance(sh, []value.Value{value.IntValue(42)}, 10, 12, 0)
		require.NoError(t, load.Flush(ctx))
		require.NoError(t, st.Close())

		st = s.Open(t)
		defer st.Close()
		load = st.Load()
		resumed, err = load.Open(ctx, meta, false)
		require.NoError(t, err)
		require.True(t, resumed, "the saved load resumes")
		saved := load.Shards()
		require.Len(t, saved, 2)
		require.Equal(t, int64(10), saved[0].Rows)
		require.Equal(t, []value.Value{value.IntValue(42)}, saved[0].After)
		_, err = st.Load().Open(ctx, checkpoint.Meta{Fingerprint: "f2"}, false)
		require.ErrorIs(t, err, checkpoint.ErrMismatch)

		require.NoError(t, st.Load().Discard(ctx))
		resumed, err = st.Load().Open(ctx, meta, false)
		require.NoError(t, err)
		require.False(t, resumed, "a discarded load starts over")
	})

	t.Run("RemovesEverything", func(t *testing.T) {
		s := fresh(t)
		st := s.Open(t)
		require.NoError(t, st.WriteState(ctx, []byte(`{}`)))
		require.NoError(t, st.SetKeys(ctx, []statestore.Entry{{Entity: "e", Row: []byte("r"), Keys: []string{"k"}}}))
		load := st.Load()
		_, err := load.Open(ctx, checkpoint.Meta{Fingerprint: "f"}, false)
		require.NoError(t, err)
		require.NoError(t, load.Flush(ctx))
		removed, err := st.Remove(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, removed)
		st = s.Open(t)
		defer st.Close()
		doc, err := st.ReadState(ctx)
		require.NoError(t, err)
		require.Nil(t, doc)
		got, err := st.Keys(ctx, "e", [][]byte{[]byte("r")})
		require.NoError(t, err)
		require.Empty(t, got[0])
		resumed, err := st.Load().Open(ctx, checkpoint.Meta{Fingerprint: "f"}, false)
		require.NoError(t, err)
		require.False(t, resumed)
	})

	t.Run("ResumesAfterACrashBetweenAnyTwoCalls", func(t *testing.T) {
		// A clean run counts the calls; then a crash is injected after
		// each of them in turn.
		calls := runRounds(t, fresh(t), -1)
		require.Greater(t, calls, 10)
		for n := 0; n <= calls; n++ {
			t.Run("after_call_"+strconv.Itoa(n), func(t *testing.T) { runRounds(t, fresh(t), n) })
		}
	})

	t.Run("ListsAnEntitysRows", func(t *testing.T) {
		st := fresh(t).Open(t)
		defer st.Close()
		l, ok := st.(statestore.RowLister)
		require.True(t, ok, "sync lists the rows a TRUNCATE took (statestore.RowLister)")
		// One row longer than a DynamoDB key holds (kept by its hash),
		// and another entity's.
		const n = 300
		var entries []statestore.Entry
		want := map[string][]string{}
		for i := range n {
			row := []byte(fmt.Sprintf("row-%05d", i))
			if i == 7 {
				row = bytes.Repeat([]byte{'L'}, 1500)
			}
			keys := []string{fmt.Sprintf("K#%d", i)}
			entries = append(entries, statestore.Entry{Entity: "e", Row: row, Keys: keys})
			want[string(l.RowName(row))] = keys
		}
		entries = append(entries, statestore.Entry{Entity: "e2", Row: []byte("row-00001"), Keys: []string{"other"}})
		for chunk := range slices.Chunk(entries, 100) {
			require.NoError(t, st.SetKeys(ctx, chunk))
		}
		// fn may write the index while the listing runs: each row is
		// forgotten as it is listed, as sync deletes a vanished row's.
		got := map[string][]string{}
		err := l.ListRows(ctx, "e", func(row []byte, keys []string) error {
			_, dup := got[string(row)]
			require.False(t, dup, "row %q listed twice", row)
			got[string(row)] = keys
			return st.SetKeys(ctx, []statestore.Entry{{Entity: "e", Row: row}})
		})
		require.NoError(t, err)
		require.Equal(t, want, got)
		left := 0
		require.NoError(t, l.ListRows(ctx, "e", func([]byte, []string) error { left++; return nil }))
		require.Zero(t, left, "a row listed under its name is forgotten by SetKeys of that name")
		long, err := st.Keys(ctx, "e", [][]byte{entries[7].Row})
		require.NoError(t, err)
		require.Empty(t, long[0], "the long row, forgotten under the name it was listed by, has no keys")
		other, err := st.Keys(ctx, "e2", [][]byte{[]byte("row-00001")})
		require.NoError(t, err)
		require.Equal(t, [][]string{{"other"}}, other)
	})

	t.Run("BatchesARound", func(t *testing.T) {
		s := fresh(t)
		st := s.Open(t)
		defer st.Close()
		one := roundCost(t, st, s.Requests, 1)
		require.LessOrEqual(t, one, int64(fixedCost), "a round of one row costs at most %d requests", fixedCost)
		const rows = 250
		many := roundCost(t, st, s.Requests, rows)
		require.LessOrEqual(t, many, int64(fixedCost+rows/rowsPerRequest),
			"a round of %d rows costs %d requests: the row index must be read and written in batches of at least %d rows", rows, many, rowsPerRequest)
	})
}

// A round (read the index, record intents, record the written keys, save
// the state) costs at most fixedCost requests plus one per rowsPerRequest
// rows.
const (
	fixedCost      = 5
	rowsPerRequest = 10
)

func roundCost(t *testing.T, st statestore.Store, requests func() int64, n int) int64 {
	ctx := context.Background()
	rows := make([][]byte, n)
	intents := make([]statestore.Entry, n)
	final := make([]statestore.Entry, n)
	for i := range rows {
		rows[i] = []byte(fmt.Sprintf("cost-%d-%d", n, i))
		intents[i] = statestore.Entry{Entity: "e", Row: rows[i], Keys: []string{"old", "new"}}
		final[i] = statestore.Entry{Entity: "e", Row: rows[i], Keys: []string{"new"}}
	}
	before := requests()
	_, err := st.Keys(ctx, "e", rows)
	require.NoError(t, err)
	require.NoError(t, st.SetKeys(ctx, intents))
	require.NoError(t, st.SetKeys(ctx, final))
	require.NoError(t, st.WriteState(ctx, []byte(`{"n":`+strconv.Itoa(n)+`}`)))
	return requests() - before
}

func nilEmpty(in [][]string) [][]string {
	out := make([][]string, len(in))
	for i, k := range in {
		if len(k) > 0 {
			out[i] = k
		}
	}
	return out
}

// errCrash is the injected failure.
var errCrash = errors.New("injected crash")

// crashing passes calls through until the budget is spent, then fails
// every call: the process died there.
type crashing struct {
	statestore.Store
	left int // -1: never
	n    int
}

func (c *crashing) call() error {
	c.n++
	if c.left >= 0 && c.n > c.left {
		return errCrash
	}
	return nil
}

func (c *crashing) ReadState(ctx context.Context) ([]byte, error) {
	if err := c.call(); err != nil {
		return nil, err
	}
	return c.Store.ReadState(ctx)
}

func (c *crashing) WriteState(ctx context.Context, doc []byte) error {
	if err := c.call(); err != nil {
		return err
	}
	return c.Store.WriteState(ctx, doc)
}

func (c *crashing) Keys(ctx context.Context, entity string, rows [][]byte) ([][]string, error) {
	if err := c.call(); err != nil {
		return nil, err
	}
	return c.Store.Keys(ctx, entity, rows)
}

func (c *crashing) SetKeys(ctx context.Context, entries []statestore.Entry) error {
	if err := c.call(); err != nil {
		return err
	}
	return c.Store.SetKeys(ctx, entries)
}

// The rounds of the crash test: each moves some rows' items to new keys
// (or removes them), as re-derived rows do; over three rounds every row
// is inserted, moved and deleted or emptied once.
const (
	crashRows   = 4
	crashRounds = 3
)

// wants is the keys row r produces after round i (none for some).
func wants(i, r int) []string {
	switch (i + r) % 4 {
	case 0:
		return nil
	case 1:
		return []string{fmt.Sprintf("r%d-i%d", r, i)}
	}
	return []string{fmt.Sprintf("r%d-a", r), fmt.Sprintf("r%d-i%d", r, i)}
}

// runRounds applies crashRounds rounds the way sync does (read the old
// keys, record the union as intent, write the table, record the new keys,
// save the position). With crashAt >= 0 the store fails from call
// crashAt+1 on; the store is then closed as a killed process leaves it,
// reopened, checked (every key the table holds is in the index), and the
// rounds resumed from the saved position. At the end the table and the
// index must hold exactly the last round's keys. It returns how many
// store calls the run made.
func runRounds(t *testing.T, s Subject, crashAt int) int {
	ctx := context.Background()
	table := map[string]bool{}
	rows := make([][]byte, crashRows)
	for r := range rows {
		rows[r] = []byte("row" + strconv.Itoa(r))
	}
	apply := func(st statestore.Store, from int) error {
		for i := from; i < crashRounds; i++ {
			old, err := st.Keys(ctx, "e", rows)
			if err != nil {
				return err
			}
			var intents, final []statestore.Entry
			for r := range rows {
				want := wants(i, r)
				union := slices.Clone(old[r])
				for _, k := range want {
					if !slices.Contains(union, k) {
						union = append(union, k)
					}
				}
				intents = append(intents, statestore.Entry{Entity: "e", Row: rows[r], Keys: union})
				final = append(final, statestore.Entry{Entity: "e", Row: rows[r], Keys: want})
			}
			if err := st.SetKeys(ctx, intents); err != nil {
				return err
			}
			for r := range rows {
				want := wants(i, r)
				for _, k := range old[r] {
					if !slices.Contains(want, k) {
						delete(table, k)
					}
				}
				for _, k := range want {
					table[k] = true
				}
			}
			if err := st.SetKeys(ctx, final); err != nil {
				return err
			}
			if err := st.WriteState(ctx, []byte(strconv.Itoa(i))); err != nil {
				return err
			}
		}
		return nil
	}
	resume := func(st statestore.Store) (int, error) {
		doc, err := st.ReadState(ctx)
		if err != nil || doc == nil {
			return 0, err
		}
		done, err := strconv.Atoi(string(doc))
		return done + 1, err
	}

	c := &crashing{Store: s.Open(t), left: crashAt}
	from, err := resume(c)
	if err == nil {
		err = apply(c, from)
	}
	if crashAt < 0 {
		require.NoError(t, err)
		require.NoError(t, c.Store.Close())
		return c.n
	}
	if err != nil {
		require.ErrorIs(t, err, errCrash)
	}
	require.NoError(t, c.Store.Close())

	st := s.Open(t)
	defer st.Close()
	held, err := st.Keys(ctx, "e", rows)
	require.NoError(t, err)
	indexed := map[string]bool{}
	for _, ks := range held {
		for _, k := range ks {
			indexed[k] = true
		}
	}
	for k := range table {
		require.True(t, indexed[k], "after a crash after call %d, the table holds %q and no row's index entry has it: a replay would never delete it", crashAt, k)
	}
	from, err = resume(st)
	require.NoError(t, err)
	require.NoError(t, apply(st, from))
	held, err = st.Keys(ctx, "e", rows)
	require.NoError(t, err)
	var want, got, index []string
	for r := range rows {
		want = append(want, wants(crashRounds-1, r)...)
		index = append(index, held[r]...)
	}
	for k := range table {
		got = append(got, k)
	}
	sort.Strings(want)
	sort.Strings(got)
	sort.Strings(index)
	require.Equal(t, want, got, "the table after resuming")
	require.Equal(t, want, index, "the row index after resuming")
	doc, err := st.ReadState(ctx)
	require.NoError(t, err)
	require.True(t, bytes.Equal([]byte(strconv.Itoa(crashRounds-1)), doc))
	return 0
}
