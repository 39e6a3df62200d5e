package cdc

import "github.com/dynafold/dynafold/source"

// Confirmed is the position sync has applied and confirmed every change
// up to, and false before the change stream has confirmed anything (the
// initial load runs). The shadow comparison waits for it to pass the
// position of its SQL snapshot before it reads DynamoDB. Safe from any
// goroutine.
func (l *Live) Confirmed() (source.Position, bool) {
	p := l.confirmed.Load()
	if p == nil {
		return "", false
	}
	return *p, true
}

// Streaming reports whether the change stream is open: the initial load
// is done and sync applies changes as they come. Safe from any goroutine.
func (l *Live) Streaming() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.streaming
}

// written is the last round whose writes began: its end position, or
// unknown (a piece of a large transaction, a re-derive from the source as
// it is now).
type written struct {
	pos     source.Position
	unknown bool
}

// writing records that a round's writes begin. pos is the end of its last
// transaction, "" when it has none (a piece of a large transaction, a
// re-derive): a write of state past any position.
func (l *Live) writing(pos source.Position) {
	l.written.Store(&written{pos: pos, unknown: pos == ""})
}

// Written is the end position of the last round whose writes began to
// reach the table; known is false when those writes carry state of no
// known position (a piece of a large transaction, a re-derive), and any
// is false before sync wrote anything while streaming. A reader that
// compares the table with the source at a position P can trust what it
// read only if no round past P began before it finished (Written at or
// before P): the shadow comparison holds its mismatches to that.
func (l *Live) Written() (pos source.Position, known, any bool) {
	w := l.written.Load()
	if w == nil {
		return "", false, false
	}
	return w.pos, !w.unknown, true
}
