package verify

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/retry"
	"github.com/dynafold/dynafold/sink"
)

// Mode says what a comparison is for; it decides which phases run and how
// the report words its result.
type Mode string

// The modes.
const (
	// ModeVerify checks a migrated table: every (sampled) item is looked up
	// and the table is swept for stale items (Options.Sweep says how).
	ModeVerify Mode = "verify"
	// ModeDiff previews what migrate would change: the same work as verify,
	// always over every row.
	ModeDiff Mode = "diff"
	// ModePrune deletes stale items after a migration: items are only
	// rebuilt for their keys (no lookups), then the table is swept and
	// stale items handed to Options.Delete.
	ModePrune Mode = "prune"
)

// Sweep says how a comparison looks for stale items (Options.Sweep,
// Report.Sweep).
type Sweep string

// The sweeps.
const (
	// SweepTable scans every item of the table (key and type attribute
	// only) and merges the keys with the keys the source makes: a stale
	// item is found wherever it is, in collections no row produces too.
	// It reads the whole table once.
	SweepTable Sweep = "table"
	// SweepCollections queries only the collections (partition keys) some
	// row produces: cheaper when the rows cover a small part of the
	// table, blind to collections no row produces any more.
	SweepCollections Sweep = "collections"
	// SweepDigests is the key sweep of an incremental run given the
	// previous run's collection digests: only the collections whose keys
	// changed, appeared, vanished or were written are queried (a report
	// value; it is chosen by Options.Digests, not by Options.Sweep).
	SweepDigests Sweep = "digests"
	// SweepNone: no sweep ran (Options.NoSweep).
	SweepNone Sweep = "none"
)

// Deleter removes items from the target by key. Delete is called
// concurrently by the sweep workers with at most 25 keys at a time; it
// returns once every key is deleted, or an error that stops the run.
type Deleter interface {
	Delete(ctx context.Context, keys []map[string]types.AttributeValue) error
}

// Options tune a comparison. Zero values take the defaults noted.
type Options struct {
	Mode Mode
	// Sample is the fraction of rows checked, in (0, 1] (default 1). Rows
	// are chosen by a hash of their primary key and Seed, so the same seed
	// checks the same rows every time. Only ModeVerify samples.
	Sample float64
	Seed   uint64
	// Examples is how many findings of each class (create, update, stale)
	// the report lists with their attributes (default 10; -1 lists none).
	Examples int
	// Readers is how many shards are read at once (default 4);
	// ShardsPerEntity how many key ranges an entity is split into (default
	// 2×Readers); PageSize the rows per keyset page (default pipeline.DefaultPageSize).
	Readers         int
	ShardsPerEntity int
	PageSize        int
	// Lookups is how many BatchGetItem or Query requests are in flight
	// (default 8). A table sweep scans Readers segments at once.
	Lookups int
	// SpillBytes is how many bytes of keys each key sorter holds in memory
	// before it writes a sorted run to a temporary file (default 64 MiB).
	SpillBytes int
	// TempDir holds the spilled runs (default os.TempDir()).
	TempDir string
	// Delete removes stale items; required in ModePrune unless DryRun,
	// unused otherwise.
	Delete Deleter
	// DryRun, in ModePrune, finds the stale items without deleting them
	// (a preview of migrate --incremental's key sweep).
	DryRun bool
	// NoSweep skips the sweep for stale items: for a comparison over a
	// subset of the rows (an incremental preview), where items no row read
	// produces are not stale.
	NoSweep bool
	// KeyOnly, in ModePrune, makes the comparison key-only on both sides
	// (the key sweep of incremental runs and of a sync's resnapshot): rows
	// are read with only the columns their table keys need; the table is
	// swept as SweepTable does (or by digests), and stale examples carry
	// their key only.
	KeyOnly bool
	// Digests, in a key sweep, remembers collection digests between runs
	// (see digest.go): with Previous set only the collections whose keys
	// changed are queried instead of scanning the table; Next receives the
	// digests to remember.
	Digests *Digests
	// Sweep is how stale items are looked for: SweepTable (the default)
	// or SweepCollections. A key sweep (KeyOnly) always scans the table,
	// or queries the collections its digests name.
	Sweep Sweep
	// Source names the source in the report (a DSN's redacted identity).
	Source string
	Logger *slog.Logger
	// Backoff and Sleep pace retries of unprocessed keys; tests replace them.
	Backoff *retry.Backoff
	Sleep   func(context.Context, time.Duration) error
}

// Defaults, sized so that a run holds a few megabytes besides the spill
// budget: Readers partial batches, 2×Lookups batches of 100 items in
// flight, and Lookups collections of at most chunkKeys keys.
const (
	defaultExamples   = 10
	defaultReaders    = 4
	defaultLookups    = 8
	defaultSpillBytes = 64 << 20
)

func (o *Options) defaults() {
	if o.Mode == "" {
		o.Mode = ModeVerify
	}
	if o.Sample <= 0 || o.Mode != ModeVerify {
		o.Sample = 1
	}
	if o.Examples == 0 {
		o.Examples = defaultExamples
	}
	if o.Examples < 0 {
		o.Examples = 0
	}
	if o.Readers <= 0 {
		o.Readers = defaultReaders
	}
	if o.ShardsPerEntity <= 0 {
		o.ShardsPerEntity = 2 * o.Readers
	}
	if o.PageSize <= 0 {
		o.PageSize = pipeline.DefaultPageSize
	}
	if o.Lookups <= 0 {
		o.Lookups = defaultLookups
	}
	if o.SpillBytes <= 0 {
		o.SpillBytes = defaultSpillBytes
	}
	if o.Sweep == "" {
		o.Sweep = SweepTable
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Backoff == nil {
		b := sink.DefaultBackoff()
		o.Backoff = &b
	}
	if o.Sleep == nil {
		o.Sleep = retry.Sleep
	}
}

// Validate checks options given by the user; its messages name the flag.
func (o Options) Validate() error {
	switch o.Mode {
	case "", ModeVerify, ModeDiff, ModePrune:
	default:
		return fmt.Errorf("unknown mode %q", o.Mode)
	}
	if o.Sample < 0 || o.Sample > 1 {
		return fmt.Errorf("--sample must be a fraction in (0, 1], not %g", o.Sample)
	}
	if o.Mode == ModePrune && o.Delete == nil && !o.DryRun {
		return fmt.Errorf("prune needs a deleter")
	}
	if o.KeyOnly && o.Mode != ModePrune {
		return fmt.Errorf("a key-only comparison is a prune")
	}
	switch o.Sweep {
	case "", SweepTable:
	case SweepCollections:
		if o.KeyOnly {
			return fmt.Errorf("--sweep collections does not apply to a key sweep, which scans the table or queries the collections whose keys changed")
		}
	default:
		return fmt.Errorf("--sweep must be table or collections, not %q", o.Sweep)
	}
	if o.Readers < 0 || o.Lookups < 0 || o.PageSize < 0 {
		return fmt.Errorf("--concurrency, --lookups and --page-size must be at least 1")
	}
	return nil
}
