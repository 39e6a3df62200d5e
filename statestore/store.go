// Package statestore keeps what a live sync must remember between runs:
// the sync state (its phase and confirmed source position), the row index
// (per entity row, the keys of the items the table holds for it) and the
// initial load's checkpoint. Local files (File) are the default; DynamoDB
// (Dynamo) keeps them off the machine, so that a sync can move to another
// host, or a standby take over, with no reload.
//
// The one rule every store keeps: the state document, which records the
// confirmed position, is never durable before the row-index writes made
// before it. A position confirmed in the state then always finds the
// index recording every key the table may hold for the changes up to it,
// and a crash between any two calls leaves a state that resumes
// correctly (statestoretest checks this on every implementation).
package statestore

import (
	"context"
	"errors"

	"github.com/dynafold/dynafold/checkpoint"
)

// Entry is one row's item keys, for SetKeys.
type Entry struct {
	Entity string
	// Row is the encoded source key of the row.
	Row []byte
	// Keys are the item keys the row may have in the table; none removes
	// the row from the index.
	Keys []string
}

// Store keeps one sync's state. Its methods may be called concurrently:
// during the initial load, builders call Keys and SetKeys at once, each
// for its own rows (no row is read by two); the load's checkpoint store
// is called as checkpoint.Store says.
type Store interface {
	// ReadState returns the state document WriteState saved last, or nil
	// when there is none.
	ReadState(ctx context.Context) ([]byte, error)
	// WriteState replaces the state document, durably. Every SetKeys and
	// ClearKeys that returned before it is durable before the document is:
	// the position it records is never ahead of the row index.
	WriteState(ctx context.Context, doc []byte) error
	// Keys returns the item keys recorded for each of rows of entity, in
	// the order of rows (nil for a row with none). It reads every SetKeys
	// that returned before it.
	Keys(ctx context.Context, entity string, rows [][]byte) ([][]string, error)
	// SetKeys records the entries (distinct rows). Once it returns, Keys
	// reads them; they are durable at the latest when the next WriteState
	// or the load checkpoint's Flush returns.
	SetKeys(ctx context.Context, entries []Entry) error
	// ClearKeys forgets every row's keys (a resnapshot records them anew).
	ClearKeys(ctx context.Context) error
	// Load returns the initial load's checkpoint. Its Flush and Finish make
	// every SetKeys before them durable first. Discard forgets it.
	Load() checkpoint.Store
	// Remove deletes the state, the row index and the load checkpoint,
	// and says what it removed (sync cleanup). The store is closed after.
	Remove(ctx context.Context) ([]string, error)
	// Where names the store for messages and reports: a path or a
	// dynamodb:// URL.
	Where() string
	// Close releases the store; it does not remove anything.
	Close() error
}

// ErrFenced is returned by a write of a store whose lease was taken over
// by another sync: it must write nothing more.
var ErrFenced = errors.New("the state is held by another sync (the lease was taken over); this sync writes nothing more")

// Lister is a store that can list its whole row index in one pass, more
// cheaply than reading it row by row: Cached warms itself with it.
type Lister interface {
	// ListKeys calls fn, possibly from several goroutines at once, for
	// each row of the index, and stops after limit rows (or what it costs
	// to list them). all says it listed every row: false when it stopped
	// early or met a row it cannot name (one stored by its hash).
	ListKeys(ctx context.Context, limit int, fn func(entity string, row []byte, keys []string)) (all bool, err error)
}
