package cdc

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

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
