package cdc

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/statestore"
	"github.com/dynafold/dynafold/value"
)

// readChunk bounds the tuples of one IN list: large enough to amortize a
// round trip, small enough for any planner and for MySQL's packet size.
const readChunk = 500

// affected is, per entity, the rows to re-derive, by encoded key.
type affected map[*mapping.EntityPlan]map[string][]value.Value

func (a affected) add(ep *mapping.EntityPlan, key []value.Value) {
	m := a[ep]
	if m == nil {
		m = map[string][]value.Value{}
		a[ep] = m
	}
	k := string(rowKey(key))
	if _, ok := m[k]; !ok {
		m[k] = slices.Clone(key)
	}
}

// derived is one entity row as it is now: its items (none when the row is
// gone, filtered out or rejected).
type derived struct {
	entity *mapping.EntityPlan
	key    []byte
	items  []mapping.Item
	old    []string
}

// id names the row for messages and ownership: entity and encoded key.
func (d *derived) id() string { return "entity " + d.entity.Name + " row " + string(d.key) }

// round applies a group of whole transactions.
type round struct {
	e      *engine
	txns   []*source.Txn
	counts Counters
	// rejects serializes rows that cannot become items, which slices read
	// at once may meet (rowFailed).
	rejects sync.Mutex
	// readTime and writeTime are how long the round read the source and
	// wrote the table, for the debug log (readTime sums the slices' reads,
	// which overlap when several connections read them); readers is how
	// many connections read its slices.
	readTime, writeTime time.Duration
	readers             int
	// owners maps each item key the round has put to the row that put it,
	// across the round's slices: a key one row puts is never deleted as
	// another row's old key, and two rows putting one key is an error.
	// Both are kept as 128-bit hashes: a round that fans out to hundreds
	// of thousands of rows keeps a tenth of the memory its keys' text
	// would take (and a collision, at 2^-128 a pair, is never expected).
	owners map[hash128]hash128
	// truncated are the tables the round's transactions emptied.
	truncated []source.TableRef
}

// apply re-derives every row the round's changes touch and writes the
// difference. It returns once DynamoDB has acknowledged every write and the
// row index records the result.
func (r *round) apply(ctx context.Context) error {
	started := time.Now()
	aff, fan, err := r.touched()
	if err != nil {
		return err
	}
	rd, err := r.e.job.Reader.Current(ctx, r.txns)
	if err != nil {
		return fmt.Errorf("reading the source: %w", err)
	}
	defer rd.Close()
	if err := r.matchJoins(ctx, rd, aff, fan); err != nil {
		return err
	}
	r.readTime += time.Since(started)
	return r.rederive(ctx, rd, aff)
}

// touched is the rows the round's changes touch: by key, for an entity's
// own and nested tables; by the values of a join's columns, for a table an
// entity pre-joins, whose rows matchJoins then finds.
func (r *round) touched() (affected, map[*dep][][]value.Value, error) {
	aff := affected{}
	fan := map[*dep][][]value.Value{}
	for _, t := range r.txns {
		if !t.Partial {
			r.counts.Transactions++
		}
		for _, ch := range t.Changes {
			r.counts.Changes++
			if ch.Op == source.Truncate {
				// The rows left without row events: the table's readers
				// are derived again once the round is applied.
				if !slices.Contains(r.truncated, ch.Table) {
					r.truncated = append(r.truncated, ch.Table)
				}
				continue
			}
			for _, d := range r.e.graph.byTable[ch.Table] {
				for _, img := range []map[string]value.Value{ch.Old, ch.New} {
					vals, ok := pick(img, d.cols)
					if !ok {
						continue
					}
					switch d.kind {
					case depBase, depNest:
						aff.add(d.entity, vals)
					case depJoin:
						fan[d] = append(fan[d], vals)
						r.counts.ChangesFanned++
					}
				}
			}
		}
	}
	return aff, fan, nil
}

// matchJoins adds to aff the entity rows that join the changed rows of
// the tables they pre-join.
func (r *round) matchJoins(ctx context.Context, rd source.Reader, aff affected, fan map[*dep][][]value.Value) error {
	for d, tuples := range fan {
		for chunk := range slices.Chunk(dedupeTuples(tuples), readChunk) {
			err := rd.MatchKeys(ctx, d.entity.Query, source.Match{Columns: d.refs, Tuples: chunk}, func(key []value.Value) error {
				aff.add(d.entity, key)
				return nil
			})
			if err != nil {
				return fmt.Errorf("finding the %s rows that join %s: %w", d.entity.Name, d.alias, err)
			}
		}
	}
	return nil
}

// rederive re-derives the rows of aff and writes them a slice at a time,
// so that a change that fans out to a million rows holds a few slices of
// them in memory, not all; every slice reads the same snapshot, and the
// round's position is confirmed only after the last. Slices are read
// ahead while earlier ones are written: the reads need only the snapshot,
// and the writes, with the row index, stay in the slices' order. A
// slice's row-index entries are read while its rows are read from the
// source: both need only the keys, and no other slice of the round has
// those rows (an earlier round's writes are all acknowledged before this
// one starts). A source whose reader forks (PostgreSQL) reads several
// slices at once, each over a connection of its own that imports the
// round's snapshot.
func (r *round) rederive(ctx context.Context, rd source.Reader, aff affected) error {
	nrows, nslices := 0, 0
	for _, keys := range aff {
		nrows += len(keys)
		nslices += (len(keys) + writeSlice - 1) / writeSlice
	}
	// Sized for an item a row, the common case: a map grown from empty
	// to a fan-out's hundreds of thousands of keys allocates it many times.
	r.owners = make(map[hash128]hash128, nrows)
	if nrows <= writeSlice {
		// A round of one slice's rows, even spread over a few entities,
		// reads them faster on its connection than it forks another.
		nslices = 1
	}
	readers, err := r.forks(ctx, rd, nslices)
	for _, f := range readers[1:] {
		defer f.Close()
	}
	if err != nil {
		return fmt.Errorf("reading the source: %w", err)
	}
	r.readers = len(readers)
	g, gctx := errgroup.WithContext(ctx)
	// inOrder holds the slices being read, in order, for the writer; its
	// capacity bounds how far reading runs ahead of writing.
	inOrder := make(chan *sliceRead, len(readers))
	work := make(chan *sliceRead)
	g.Go(func() error {
		defer close(inOrder)
		defer close(work)
		for _, ep := range r.e.plan.Entities {
			keys := ordered(aff[ep])
			delete(aff, ep) // the ordered keys are all that is needed now
			for slice := range slices.Chunk(keys, writeSlice) {
				s := &sliceRead{ep: ep, rows: slice, done: make(chan struct{})}
				for _, ch := range []chan *sliceRead{inOrder, work} {
					select {
					case ch <- s:
					case <-gctx.Done():
						return gctx.Err()
					}
				}
			}
		}
		return nil
	})
	for _, rd := range readers {
		g.Go(func() error {
			for s := range work {
				started := time.Now()
				s.derived, s.err = r.readSlice(gctx, rd, s.ep, s.rows)
				s.took = time.Since(started)
				close(s.done)
				if s.err != nil {
					return s.err
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		for s := range inOrder {
			select {
			case <-s.done:
			case <-gctx.Done():
				return gctx.Err()
			}
			if s.err != nil {
				return s.err
			}
			r.counts.RowsDerived += int64(len(s.derived))
			r.readTime += s.took
			if err := r.write(gctx, s.derived); err != nil {
				return err
			}
		}
		return nil
	})
	return g.Wait()
}

// sliceRead is one slice of a round's rows of one entity, being read.
type sliceRead struct {
	ep   *mapping.EntityPlan
	rows []keyedRow
	// done is closed once derived (or err) and took are set.
	done    chan struct{}
	derived []*derived
	err     error
	took    time.Duration
}

// forks is rd and, when the source can fork its reader and the round has
// more than one slice, forks of it: one per slice read at once, up to the
// readers the engine may use. The caller closes the forks (all but the
// first), also those returned with an error.
func (r *round) forks(ctx context.Context, rd source.Reader, nslices int) ([]source.Reader, error) {
	out := []source.Reader{rd}
	forker, ok := rd.(source.Forker)
	if !ok {
		return out, nil
	}
	for len(out) < min(nslices, r.e.opts.Readers) {
		f, err := forker.Fork(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
	return out, nil
}

// readSlice reads a slice's rows from the source and their keys from the
// row index, at once.
func (r *round) readSlice(ctx context.Context, rd source.Reader, ep *mapping.EntityPlan, slice []keyedRow) ([]*derived, error) {
	rks := make([][]byte, len(slice))
	for i, row := range slice {
		rks[i] = []byte(row.encoded)
	}
	old := r.readOld(ctx, ep, rks)
	rows, err := r.derive(ctx, rd, ep, slice, rks)
	olds, oerr := old()
	if err != nil {
		return nil, err
	}
	if oerr != nil {
		return nil, fmt.Errorf("reading the row index: %w", oerr)
	}
	for i, d := range rows {
		d.old = olds[i]
	}
	return rows, nil
}

// hash128 identifies an item key or a row in a round's owners.
type hash128 [2]uint64

// ownerSeeds are the two seeds of hashOf, chosen once per process.
var ownerSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// hashOf is a 128-bit hash of parts, each ended by a zero byte.
func hashOf(parts ...string) hash128 {
	var out hash128
	for i, seed := range ownerSeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		for _, p := range parts {
			h.WriteString(p)
			h.WriteByte(0)
		}
		out[i] = h.Sum64()
	}
	return out
}

// writeSlice is how many re-derived rows are written at a time.
const writeSlice = 4096

// ordered returns the rows of m in the order of their encodings (rowKey:
// per column, its kind, its text's length, its text), so that a slice,
// and each IN list of it, reads neighbouring rows: the rows one parent
// fans out to sit together in their index, and a list of scattered keys
// costs the server a random read each (or a hash join over the whole
// parent table). The order is for locality only: shorter texts first puts
// integers in numeric order, and keys of one length in their text's. The
// encodings are m's own keys, so ordering costs no text rendered again,
// and each row keeps its encoding for the row index.
func ordered(m map[string][]value.Value) []keyedRow {
	out := make([]keyedRow, 0, len(m))
	for k, v := range m {
		out = append(out, keyedRow{encoded: k, key: v, prefix: prefixOf(k)})
	}
	// A fan-out's round sorts hundreds of thousands of rows: most pairs
	// differ in their first eight bytes, which compare as one integer.
	slices.SortFunc(out, func(a, b keyedRow) int {
		if c := cmp.Compare(a.prefix, b.prefix); c != 0 {
			return c
		}
		return strings.Compare(a.encoded, b.encoded)
	})
	return out
}

// prefixOf is the first eight bytes of s as a big-endian integer, zeros
// past its end: two encodings whose prefixes differ are in the order of
// their prefixes, and equal prefixes say nothing.
func prefixOf(s string) uint64 {
	var b [8]byte
	copy(b[:], s)
	return binary.BigEndian.Uint64(b[:])
}

// keyedRow is an affected row's key, its encoding (rowKey) and the
// encoding's prefix (prefixOf), by which rows are ordered first.
type keyedRow struct {
	encoded string
	key     []value.Value
	prefix  uint64
}

// derive reads an entity's affected rows as they are now and builds their
// items, in the order of slice (rks are its encodings as bytes, which the
// rows keep). A key that reads no row yields a row with no items.
func (r *round) derive(ctx context.Context, rd source.Reader, ep *mapping.EntityPlan, slice []keyedRow, rks [][]byte) ([]*derived, error) {
	var nests []*source.Query
	for _, np := range ep.Nests() {
		nests = append(nests, np.Query)
	}
	nkey := len(ep.Query.Key)
	// A row read is found among keys by its encoding, written into one
	// scratch buffer: the row takes the encoding rks already holds, so a
	// fan-out's hundreds of thousands of rows allocate no key of their own.
	keys := make([][]value.Value, len(slice))
	pos := make(map[string]int, len(slice))
	for i, row := range slice {
		keys[i] = row.key
		pos[row.encoded] = i // the slice's own strings: no copy per row
	}
	out := make([]*derived, len(keys))
	var scratch []byte
	// Items are built as migrate builds them: encoded once from their
	// attributes, which come from the arena's blocks, instead of a map of
	// single allocations the writer encodes later. A block lives as long
	// as an item built from it, the round's writes included.
	var arena mapping.Arena
	for chunk := range slices.Chunk(keys, readChunk) {
		err := rd.ReadKeys(ctx, ep.Query, nests, chunk, func(row value.Row, nested [][]value.Row) error {
			scratch = appendRowKey(scratch[:0], row[:nkey])
			i, ok := pos[string(scratch)]
			if !ok {
				return nil // not a key asked for
			}
			d := &derived{entity: ep, key: rks[i]}
			items, err := ep.BuildNested(row, nested, nil, &arena)
			if err != nil {
				if perr := r.rowFailed(ep, row, err); perr != nil {
					return perr
				}
				items = nil
			}
			d.items = items
			out[i] = d
			return nil
		})
		if err != nil {
			var re *RowFailure
			if errors.As(err, &re) {
				return nil, err
			}
			return nil, fmt.Errorf("reading entity %s rows by key: %w", ep.Name, err)
		}
	}
	for i, d := range out {
		if d == nil { // the row is gone: it has no items now
			out[i] = &derived{entity: ep, key: rks[i]}
		}
	}
	return out, nil
}

// rowFailed applies the entity's on_error policy to a row that cannot
// become items and counts it when the round goes on without them.
func (r *round) rowFailed(ep *mapping.EntityPlan, row value.Row, err error) error {
	r.rejects.Lock()
	defer r.rejects.Unlock()
	if perr := r.e.rowFailed(ep, row, err); perr != nil {
		return perr
	}
	r.counts.RowsRejected++
	return nil
}

// claim is the items rows put, in the rows' order, each key recorded in
// r.owners as its row's; two rows putting one key is an error naming
// both, and a row that puts one key twice puts the last of its items with
// that key. A slice's puts are a list, not a map by key: r.owners already
// knows every key the round has claimed.
func (r *round) claim(rows []*derived) ([]*mapping.Item, error) {
	n := 0
	for _, d := range rows {
		n += len(d.items)
	}
	puts := make([]*mapping.Item, 0, n)
	for ri, d := range rows {
		id := hashOf(d.entity.Name, string(d.key))
		first := len(puts) // where this row's puts begin
		for i := range d.items {
			it := &d.items[i]
			k := hashOf(it.Key)
			prev, dup := r.owners[k]
			if dup && prev != id {
				// The other row is named when it is in this slice; one of
				// an earlier slice is known only by its hash.
				other := "another row re-derived in the same round"
				if o := putterOf(rows[:ri], it.Key); o != nil {
					other = strconv.Quote(o.id())
				}
				return nil, fmt.Errorf("two rows produce the item key %s: %s and %q (the mapping's keys are not unique for the source as it is now)",
					it.KeyText(), other, d.id())
			}
			if dup {
				if j := slices.IndexFunc(puts[first:], func(p *mapping.Item) bool { return p.Key == it.Key }); j >= 0 {
					puts[first+j] = it
					continue
				}
			}
			r.owners[k] = id
			puts = append(puts, it)
		}
	}
	return puts, nil
}

// putterOf is the row of rows that puts key, if any.
func putterOf(rows []*derived, key string) *derived {
	for _, d := range rows {
		for i := range d.items {
			if d.items[i].Key == key {
				return d
			}
		}
	}
	return nil
}

// stale is the old keys of rows that no row of the round puts: the items
// to delete. An old key the row itself puts again, the common case (an
// update that moves no item), needs no look-up in the round's owners.
func (r *round) stale(rows []*derived) map[string]bool {
	dels := map[string]bool{}
	for _, d := range rows {
		for _, k := range d.old {
			if d.puts(k) {
				continue
			}
			if _, put := r.owners[hashOf(k)]; !put {
				dels[k] = true
			}
		}
	}
	return dels
}

// puts reports whether one of d's items has the key k.
func (d *derived) puts(k string) bool {
	for i := range d.items {
		if d.items[i].Key == k {
			return true
		}
	}
	return false
}

// keysChanged reports whether d's items have other keys, or the same in
// another order, than the row index records for it.
func (d *derived) keysChanged() bool {
	if len(d.items) != len(d.old) {
		return true
	}
	for i, k := range d.old {
		if d.items[i].Key != k {
			return true
		}
	}
	return false
}

// write records the intent in the row index, writes puts and deletes, and
// then records the new keys.
func (r *round) write(ctx context.Context, rows []*derived) error {
	store := r.e.store
	puts, err := r.claim(rows)
	if err != nil {
		return err
	}
	dels := r.stale(rows)
	// Intent: every key a row had or is about to have. Most rows put
	// again the keys they had: they have no intent to record, and nothing
	// is allocated for them.
	var intents []statestore.Entry
	for _, d := range rows {
		var union []string
		for i := range d.items {
			if k := d.items[i].Key; !slices.Contains(d.old, k) && !slices.Contains(union, k) {
				if union == nil {
					union = slices.Clone(d.old)
				}
				union = append(union, k)
			}
		}
		if union != nil {
			intents = append(intents, statestore.Entry{Entity: d.entity.Name, Row: d.key, Keys: union})
		}
	}
	if err := store.SetKeys(ctx, intents); err != nil {
		return fmt.Errorf("recording write intents in the row index: %w", err)
	}
	ops := make([]*mapping.Item, 0, len(puts)+len(dels))
	ops = append(ops, puts...)
	for k := range dels {
		ops = append(ops, r.e.plan.Table.DeleteItem(k))
	}
	sent := time.Now()
	if err := r.e.send(ctx, ops); err != nil {
		return err
	}
	r.writeTime += time.Since(sent)
	r.counts.ItemsWritten += int64(len(puts))
	r.counts.ItemsDeleted += int64(len(dels))
	var written []statestore.Entry
	for _, d := range rows {
		if !d.keysChanged() {
			continue
		}
		keys := make([]string, len(d.items))
		for i := range d.items {
			keys[i] = d.items[i].Key
		}
		written = append(written, statestore.Entry{Entity: d.entity.Name, Row: d.key, Keys: keys})
	}
	if err := store.SetKeys(ctx, written); err != nil {
		return fmt.Errorf("recording written keys in the row index: %w", err)
	}
	return nil
}

// readOld starts reading from the row index the keys each of rows (of
// entity ep, encoded) had, and returns the wait for them.
func (r *round) readOld(ctx context.Context, ep *mapping.EntityPlan, rows [][]byte) func() ([][]string, error) {
	done := make(chan struct{})
	var old [][]string
	var err error
	go func() {
		defer close(done)
		old, err = r.e.store.Keys(ctx, ep.Name, rows)
	}()
	return func() ([][]string, error) {
		<-done
		return old, err
	}
}

// send writes ops (distinct keys) with the writers in parallel and returns
// once every one is acknowledged. The head item of a split aggregate is
// written only after every other write of the round, its parts included,
// is acknowledged: a reader that finds the head finds all its parts.
func (e *engine) send(ctx context.Context, ops []*mapping.Item) error {
	var heads, rest []*mapping.Item
	for _, it := range ops {
		if it.SplitParts > 0 {
			heads = append(heads, it)
		} else {
			rest = append(rest, it)
		}
	}
	for _, group := range [][]*mapping.Item{rest, heads} {
		if err := e.sendAll(ctx, group); err != nil {
			return err
		}
	}
	return nil
}

func (e *engine) sendAll(ctx context.Context, ops []*mapping.Item) error {
	if len(ops) == 0 {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(e.opts.Writers)
	res := &results{}
	// Each batch is a window of ops, which nothing changes before Wait
	// returns, and its items' encodings sit in arena blocks that are never
	// reused (mapping.Arena): a retried request sends what was built. The
	// writer owns each request body it encodes (sink.Body).
	for batch := range slices.Chunk(ops, sink.MaxBatchItems) {
		g.Go(func() error { return e.writer.Write(gctx, batch, res) })
	}
	if err := g.Wait(); err != nil {
		if errors.Is(err, sink.ErrGaveUp) {
			return &pipeline.ResumableError{Err: err}
		}
		return err
	}
	return res.err()
}

// results receives the writer's outcomes for a round.
type results struct {
	mu     sync.Mutex
	refuse error
}

func (r *results) Acked([]*mapping.Item) {}

func (r *results) Rejected(it *mapping.Item, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse == nil {
		r.refuse = fmt.Errorf("DynamoDB refused item %s: %w", it.KeyText(), err)
	}
}

func (r *results) Retried([]*mapping.Item, bool) {}

func (r *results) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refuse
}

// pick returns the values of cols in img; ok is false when the image lacks
// one (a before-image that carries only the key) or one is NULL (a row that
// references nothing).
func pick(img map[string]value.Value, cols []string) ([]value.Value, bool) {
	if img == nil {
		return nil, false
	}
	out := make([]value.Value, len(cols))
	for i, c := range cols {
		v, ok := img[c]
		if !ok || v.IsNull() {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

func dedupeTuples(ts [][]value.Value) [][]value.Value {
	seen := map[string]bool{}
	out := ts[:0]
	for _, t := range ts {
		k := string(rowKey(t))
		if !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	return out
}
