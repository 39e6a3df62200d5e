package sink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dynafold/dynafold/mapping"
)

// recordingSink acknowledges on Write (or, with late, only on Flush) and
// records, per item key, the order in which items were acknowledged.
type recordingSink struct {
	late bool
	fail func(batch []*mapping.Item) error

	mu      sync.Mutex
	held    []*mapping.Item
	acked   []string
	inWrite atomic.Int32
	maxIn   atomic.Int32
	writes  atomic.Int32
	flushes atomic.Int32
}

func (s *recordingSink) Write(ctx context.Context, batch []*mapping.Item, res Results) error {
	n := s.inWrite.Add(1)
	defer s.inWrite.Add(-1)
	for {
		m := s.maxIn.Load()
		if n <= m || s.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	s.writes.Add(1)
	if s.fail != nil {
		if err := s.fail(batch); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.late {
		s.held = append(s.held, batch...)
		return nil
	}
	s.ackLocked(batch, res)
	return nil
}

func (s *recordingSink) ackLocked(items []*mapping.Item, res Results) {
	for _, it := range items {
		s.acked = append(s.acked, it.Key)
	}
	res.Acked(items)
}

func (s *recordingSink) Flush(context.Context) error {
	s.flushes.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range s.held {
		s.acked = append(s.acked, it.Key)
	}
	s.held = nil
	return nil
}

func (s *recordingSink) Close() error { return nil }
func (s *recordingSink) Stats() Stats { return Stats{} }

// splitSet is n plain items and, per aggregate, parts then head, as
// mapping builds them.
func splitSet(plain, aggs, parts int) []*mapping.Item {
	var out []*mapping.Item
	for i := range plain {
		out = append(out, &mapping.Item{Key: fmt.Sprintf("plain#%d", i)})
	}
	for a := range aggs {
		for p := range parts {
			out = append(out, &mapping.Item{Key: fmt.Sprintf("agg#%d#PART#%d", a, p+1), SplitPart: p + 1})
		}
		out = append(out, &mapping.Item{Key: fmt.Sprintf("agg#%d", a), SplitParts: parts})
	}
	return out
}

func TestWriteSetHeadsAfterEveryOtherItem(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("late=%v", late), func(t *testing.T) {
			s := &recordingSink{late: late}
			w := &Writers{Sink: s, N: 4}
			items := splitSet(200, 7, 3)
			if err := w.WriteSet(context.Background(), items, &countingResults{}); err != nil {
				t.Fatal(err)
			}
			if len(s.acked) != len(items) {
				t.Fatalf("acknowledged %d items, want %d", len(s.acked), len(items))
			}
			firstHead := slices.IndexFunc(s.acked, func(k string) bool {
				return strings.HasPrefix(k, "agg#") && !strings.Contains(k, "#PART#")
			})
			if firstHead != len(items)-7 {
				t.Fatalf("first head acknowledged at %d, want %d (every other item before any head)", firstHead, len(items)-7)
			}
			if got := s.maxIn.Load(); got > 4 {
				t.Errorf("%d Write calls at once, want at most 4", got)
			}
			if got, want := w.Begun(), int64((207+24)/25+1); got != want {
				t.Errorf("Begun = %d, want %d", got, want)
			}
		})
	}
}

func TestWriteSetStopsAtFirstError(t *testing.T) {
	boom := errors.New("boom")
	s := &recordingSink{fail: func(batch []*mapping.Item) error {
		if batch[0].Key == "plain#0" {
			return boom
		}
		return nil
	}}
	w := &Writers{Sink: s, N: 2}
	items := splitSet(100, 2, 2)
	err := w.WriteSet(context.Background(), items, &countingResults{})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	for _, k := range s.acked {
		if k == "agg#0" || k == "agg#1" {
			t.Fatalf("head %s written after a failed set", k)
		}
	}
}

func TestWritersRunCheckStops(t *testing.T) {
	verdict := errors.New("on_error: fail")
	s := &recordingSink{}
	var after atomic.Int32
	w := &Writers{Sink: s, N: 3, Check: func() error {
		if after.Add(1) == 5 {
			return verdict
		}
		return nil
	}}
	in := make(chan []*mapping.Item)
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		defer close(in)
		for i := range 1000 {
			select {
			case in <- []*mapping.Item{{Key: fmt.Sprint(i)}}:
			case <-stopped:
				return
			}
		}
	}()
	if err := w.Run(context.Background(), in, &countingResults{}); !errors.Is(err, verdict) {
		t.Fatalf("err = %v, want the verdict", err)
	}
	if n := s.writes.Load(); n >= 1000 {
		t.Fatalf("%d writes after the verdict stopped the writers", n)
	}
}

func TestHeadsLast(t *testing.T) {
	plain := splitSet(3, 0, 0)
	if rest, heads := HeadsLast(plain); len(heads) != 0 || &rest[0] != &plain[0] {
		t.Fatalf("a set without heads is returned as it is")
	}
	items := splitSet(2, 2, 2)
	rest, heads := HeadsLast(items)
	if len(rest) != 6 || len(heads) != 2 || heads[0].Key != "agg#0" || heads[1].Key != "agg#1" {
		t.Fatalf("rest %d, heads %v", len(rest), heads)
	}
}

func TestSplitAggregates(t *testing.T) {
	var items []mapping.Item
	for _, it := range splitSet(1, 2, 3) {
		items = append(items, *it)
	}
	var got [][2]int
	SplitAggregates(items, func(head, first int) { got = append(got, [2]int{head, first}) })
	want := [][2]int{{4, 1}, {8, 5}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("aggregates %v, want %v", got, want)
	}
}
