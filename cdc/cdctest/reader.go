package cdctest

import (
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
)

// reader takes a stream's events and checks what holds for every one of
// them: transactions end strictly after from and after each other, idle
// positions never go back, and no position goes back behind an idle one.
type reader struct {
	f    *fixture
	cs   source.ChangeSource
	st   source.Stream
	from source.Position
	// end is the last transaction's end, last the last position seen
	// (an end or an idle position).
	end, last source.Position
}

// next returns the stream's next event.
func (r *reader) next() source.Event {
	t := r.f.t
	t.Helper()
	var ev source.Event
	select {
	case e, ok := <-r.st.Events():
		require.True(t, ok, "the stream ended: %v", r.st.Err())
		ev = e
	case <-r.f.ctx.Done():
		t.Fatalf("no event from the stream within %s", caseTimeout)
	}
	switch {
	case ev.Txn != nil && ev.Txn.Partial:
		require.Empty(t, ev.Txn.End, "a piece has no end")
	case ev.Txn != nil:
		require.NotEmpty(t, ev.Txn.End, "a transaction's end")
		require.Positive(t, r.cs.Compare(ev.Txn.End, r.from), "transaction end %s is after the stream's start %s", ev.Txn.End, r.from)
		if r.end != "" {
			require.Positive(t, r.cs.Compare(ev.Txn.End, r.end), "transaction end %s is after the previous one's, %s", ev.Txn.End, r.end)
		}
		r.seen(ev.Txn.End)
		r.end = ev.Txn.End
	case ev.Idle != "":
		r.seen(ev.Idle)
	case ev.Schema != nil:
	default:
		t.Fatalf("an empty event: %+v", ev)
	}
	return ev
}

func (r *reader) seen(pos source.Position) {
	r.f.t.Helper()
	require.GreaterOrEqual(r.f.t, r.cs.Compare(pos, r.from), 0, "position %s comes after the stream's start %s", pos, r.from)
	if r.last != "" {
		require.GreaterOrEqual(r.f.t, r.cs.Compare(pos, r.last), 0, "position %s comes after %s", pos, r.last)
	}
	r.last = pos
}

// event returns the next transaction or schema event, skipping idle
// positions.
func (r *reader) event() source.Event {
	r.f.t.Helper()
	for {
		if ev := r.next(); ev.Idle == "" {
			return ev
		}
	}
}

// txn returns the next transaction (or piece of one); a schema event
// fails the test.
func (r *reader) txn() *source.Txn {
	r.f.t.Helper()
	ev := r.event()
	require.Nil(r.f.t, ev.Schema, "a schema event where a transaction was expected")
	return ev.Txn
}

// txnAfterSchema returns the next transaction, past any schema events.
func (r *reader) txnAfterSchema() *source.Txn {
	r.f.t.Helper()
	for {
		if ev := r.event(); ev.Schema == nil {
			return ev.Txn
		}
	}
}

// drain returns every transaction committed before now that is not
// delivered yet: those that arrive before an idle position at or past the
// log's head.
func (r *reader) drain() []*source.Txn {
	t := r.f.t
	t.Helper()
	head, err := r.cs.Head(r.f.ctx)
	require.NoError(t, err)
	var txns []*source.Txn
	for {
		ev := r.next()
		switch {
		case ev.Schema != nil:
			t.Fatalf("a schema event while draining: %+v", *ev.Schema)
		case ev.Txn != nil:
			txns = append(txns, ev.Txn)
		case r.cs.Compare(ev.Idle, head) >= 0:
			return txns
		}
	}
}
