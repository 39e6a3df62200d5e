package shadow

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/patterns"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// fakeComparer plays scripted SQL answers and DynamoDB verdicts, the last
// of each repeating.
type fakeComparer struct {
	mu     sync.Mutex
	sqls   []string
	agrees []bool
	global bool
	sqlErr error
	nSQL   int
	nCheck int
}

type fakeAnswer string

func (f *fakeComparer) Patterns() []string { return []string{"p"} }
func (f *fakeComparer) Tuples(context.Context, source.ReadOnlySession, int) ([]value.Row, error) {
	return []value.Row{{}}, nil
}
func (f *fakeComparer) Params(int, value.Row) string { return "(none)" }
func (f *fakeComparer) ReadSQL(context.Context, source.ReadOnlySession, int, value.Row) (Answer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sqlErr != nil {
		return nil, f.sqlErr
	}
	a := fakeAnswer(f.sqls[min(f.nSQL, len(f.sqls)-1)])
	f.nSQL++
	return a, nil
}
func (f *fakeComparer) Check(context.Context, Answer) (*patterns.Mismatch, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	agree := f.agrees[min(f.nCheck, len(f.agrees)-1)]
	f.nCheck++
	if agree {
		return nil, f.global, nil
	}
	return &patterns.Mismatch{}, f.global, nil
}

type fakeSource struct{}

func (fakeSource) ReadOnly(context.Context) (source.ReadOnlySession, error) {
	return fakeSession{}, nil
}

type fakeSession struct{}

func (fakeSession) Query(context.Context, string, []source.Column, []value.Value) ([]value.Row, error) {
	return nil, nil
}
func (fakeSession) Close() error { return nil }

// fakeLog numbers positions 1, 2, …; sync confirms each as soon as it is
// handed out, unless stuck. busy scripts, round by round (the last
// repeating), whether sync began writing a later change while DynamoDB
// was read.
type fakeLog struct {
	head  atomic.Int64
	stuck bool
	busy  []bool
	nBusy int
}

func (l *fakeLog) Head(context.Context) (source.Position, error) {
	return source.Position(strconv.FormatInt(l.head.Add(1), 10)), nil
}
func (l *fakeLog) Compare(a, b source.Position) int {
	x, _ := strconv.Atoi(string(a))
	y, _ := strconv.Atoi(string(b))
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
func (l *fakeLog) Streaming() bool { return true }
func (l *fakeLog) Written() (source.Position, bool, bool) {
	busy := len(l.busy) > 0 && l.busy[min(l.nBusy, len(l.busy)-1)]
	l.nBusy++
	if busy {
		return source.Position(strconv.FormatInt(l.head.Add(1), 10)), true, true
	}
	return "0", true, true
}
func (l *fakeLog) Confirmed() (source.Position, bool) {
	if l.stuck {
		return "0", true
	}
	return source.Position(strconv.FormatInt(l.head.Load(), 10)), true
}

// One comparison through the rounds: a difference is a mismatch only when
// no change past the snapshot reached the table before DynamoDB was read;
// everything that prevents a comparison is skipped, never a mismatch.
func TestCompareRounds(t *testing.T) {
	boom := errors.New("connection refused")
	cases := []struct {
		name                 string
		f                    *fakeComparer
		stuck                bool
		busy                 []bool
		want                 Counts
		sqlReads, dynamoRead int
	}{
		{name: "agree", f: &fakeComparer{sqls: []string{"a"}, agrees: []bool{true}},
			want: Counts{Comparisons: 1}, sqlReads: 1, dynamoRead: 1},
		{name: "agree while sync writes", f: &fakeComparer{sqls: []string{"a"}, agrees: []bool{true}}, busy: []bool{true},
			want: Counts{Comparisons: 1}, sqlReads: 1, dynamoRead: 1},
		{name: "differs while the source stood still", f: &fakeComparer{sqls: []string{"a"}, agrees: []bool{false}},
			want: Counts{Comparisons: 1, Mismatches: 1}, sqlReads: 1, dynamoRead: 1},
		{name: "differs while sync wrote later changes, agrees in the second round", f: &fakeComparer{sqls: []string{"a", "b"}, agrees: []bool{false, true}}, busy: []bool{true, false},
			want: Counts{Comparisons: 1}, sqlReads: 2, dynamoRead: 2},
		{name: "differs while sync wrote, then while the source stood still", f: &fakeComparer{sqls: []string{"a"}, agrees: []bool{false}}, busy: []bool{true, false},
			want: Counts{Comparisons: 1, Mismatches: 1}, sqlReads: 2, dynamoRead: 2},
		{name: "differs in every round while sync wrote: rows moved away and back", f: &fakeComparer{sqls: []string{"a"}, agrees: []bool{false}}, busy: []bool{true},
			want: Counts{Skipped: 1}, sqlReads: 3, dynamoRead: 3},
		{name: "GSI settles within the delay", f: &fakeComparer{sqls: []string{"a"}, agrees: []bool{false, true}, global: true},
			want: Counts{Comparisons: 1}, sqlReads: 1, dynamoRead: 2},
		{name: "GSI differs after the delay, the source still", f: &fakeComparer{sqls: []string{"a"}, agrees: []bool{false}, global: true},
			want: Counts{Comparisons: 1, Mismatches: 1}, sqlReads: 1, dynamoRead: 2},
		{name: "sync never past the snapshot", f: &fakeComparer{sqls: []string{"a"}, agrees: []bool{false}}, stuck: true,
			want: Counts{Skipped: 1}, sqlReads: 1, dynamoRead: 0},
		{name: "the source fails", f: &fakeComparer{sqlErr: boom},
			want: Counts{Skipped: 1}, sqlReads: 0, dynamoRead: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := &fakeLog{stuck: c.stuck, busy: c.busy}
			r := New(c.f, fakeSource{}, log, log, Options{Wait: 50 * time.Millisecond, IndexDelay: time.Millisecond})
			r.compare(context.Background(), 0, value.Row{})
			c.want.Pattern = "p"
			require.Equal(t, []Counts{c.want}, r.Counts())
			require.Equal(t, c.sqlReads, c.f.nSQL, "SQL reads")
			require.Equal(t, c.dynamoRead, c.f.nCheck, "DynamoDB reads")
		})
	}
}

// A comparison ended by sync stopping is not counted.
func TestCompareCancelledNotCounted(t *testing.T) {
	log := &fakeLog{stuck: true}
	r := New(&fakeComparer{sqls: []string{"a"}, agrees: []bool{true}}, fakeSource{}, log, log, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	r.compare(ctx, 0, value.Row{})
	require.Equal(t, []Counts{{Pattern: "p"}}, r.Counts())
}

// Run paces comparisons by the rate and ends when its context does.
func TestRunPaced(t *testing.T) {
	log := &fakeLog{}
	r := New(&fakeComparer{sqls: []string{"a"}, agrees: []bool{true}}, fakeSource{}, log, log, Options{Rate: 50})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	require.NoError(t, r.Run(ctx))
	n := r.Counts()[0].Comparisons
	require.Greater(t, n, int64(10))
	require.LessOrEqual(t, n, int64(27)) // 50/s for 0.5 s, and the first token
}
