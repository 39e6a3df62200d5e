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
