// Package export writes a migration's items as ImportTable input: gzip
// files of DynamoDB JSON lines in a local directory or under an S3
// prefix, with a manifest. Its Sink acknowledges an item only once the
// file holding it is durable, and keeps the list of durable files in the
// checkpoint, so that a killed export resumes with every item in exactly
// one file of the final set.
package export

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/internal/durable"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
)

// File is one durable data file.
type File struct {
	Name  string `json:"name"`
	Items int64  `json:"items"`
	// Bytes is the uncompressed size, Size the object's.
	Bytes  int64  `json:"bytes"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// State is what the checkpoint keeps of an export: its durable files, and
// the keys of items in them whose rows the checkpoint's positions are not
// yet past. A resumed run produces those items again and must not write
// them a second time.
type State struct {
	Files     []File   `json:"files"`
	Unsettled []string `json:"unsettled,omitempty"`
	Next      int64    `json:"next"`
}

// Options tune a Sink.
type Options struct {
	// Lanes is how many files are open at once (one per writer, so that
	// encoding and compression run in parallel).
	Lanes int
	// FileBytes closes a file once this much uncompressed JSON is in it.
	FileBytes int64
	// MaxPendingBytes bounds the memory held for items in files not yet
	// durable (default DefaultPendingBytes): an item counts its JSON line
	// plus pendingOverhead. Once the open files hold this much, they are
	// all committed (see rotate), and their items acknowledged and freed.
	MaxPendingBytes int64
	// Prefix starts every file name (the run id), so that runs never
	// collide.
	Prefix string
	// ShuffleBytes is the block of lines shuffled before they go into the
	// file (default 1 MiB): see encoder.pending.
	ShuffleBytes int
}

// DefaultPendingBytes is the default Options.MaxPendingBytes.
const DefaultPendingBytes = 16 << 20

// pendingOverhead is what an item waiting for its file keeps alive besides
// what its JSON line stands for (its source row's values): its share of
// the row's ticket in the pipeline, its key and its record in the file's
// waitlist. Measured on the portfolio design (about 200 bytes of JSON an
// item): 32 MiB of pending items held about 40 MiB of heap.
const pendingOverhead = 256

// Sink writes items into files of Destination.
type Sink struct {
	dest  Destination
	opts  Options
	lanes []*lane
	next  atomic.Uint64
	seq   atomic.Int64
	// pending is the Options.MaxPendingBytes measure of the items in open
	// files (not those of files being committed); rotating is set while a
	// writer commits the open files because pending reached the bound.
	pending  atomic.Int64
	rotating atomic.Bool
	// lastItems and lastKeys size the next file's waitlist: the item count
	// and key bytes of the last file committed.
	lastItems, lastKeys atomic.Int64

	// commitMu orders commits against checkpoint snapshots: a file joins
	// files, and its items are acknowledged, under it.
	commitMu  sync.Mutex
	files     []File
	unsettled []unsettled
	pruneAt   int
	skip      map[string]bool

	// committing holds the commits under way, for Flush to wait on.
	cmu        sync.Mutex
	committing map[*openFile]struct{}

	// encoders are idle encoders, reused by the next file.
	emu      sync.Mutex
	encoders []*encoder

	items, bytes atomic.Int64
}

type unsettled struct {
	key    string
	origin sink.Checkpointed
}

type lane struct {
	mu sync.Mutex
	f  *openFile
}

// openFile is a file being written: spool, encoder, hash, and the items
// it holds with where to acknowledge them.
type openFile struct {
	name  string
	path  string
	fh    *os.File
	enc   *encoder
	sum   hash.Hash
	size  countWriter
	bytes int64
	// pending is the file's share of Sink.pending.
	pending int64
	wait    waitlist
	rng     *rand.Rand
	done    chan struct{}
	err     error
}

// encoder turns a file's lines into its bytes. It is reused from file to
// file: a gzip writer's tables, the shuffle block and the write buffer are
// allocated once per lane, not once per file.
//
// pending holds encoded lines (ends: where each stops) until a block is
// full; the block goes into the gzip stream in random order. Items arrive
// in the order the shards are read, interleaved only over the pipeline's
// window, and ImportTable loads a file from start to end: AWS's guidance
// is to randomize sorted input so that consecutive writes do not roll
// through the key space together.
type encoder struct {
	pending []byte
	ends    []int32
	order   []int32
	// stage gathers shuffled lines into writes of stageBytes: a gzip write
	// per line of 200 bytes costs more in calls and CRC set-up than the
	// copy.
	stage []byte
	gz    *gzip.Writer
	buf   *bufio.Writer
}

const stageBytes = 64 << 10

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ sink.Sink = (*Sink)(nil)

// New returns a sink writing to dest, resuming saved (nil for a new run).
func New(dest Destination, saved *State, o Options) *Sink {
	if o.Lanes <= 0 {
		o.Lanes = 1
	}
	if o.FileBytes <= 0 {
		o.FileBytes = 256 << 20
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = DefaultPendingBytes
	}
	if o.ShuffleBytes <= 0 {
		o.ShuffleBytes = 1 << 20
	}
	s := &Sink{dest: dest, opts: o, skip: map[string]bool{}, committing: map[*openFile]struct{}{}}
	for range o.Lanes {
		s.lanes = append(s.lanes, &lane{})
	}
	if saved != nil {
		s.files = append(s.files, saved.Files...)
		for _, k := range saved.Unsettled {
			s.skip[k] = true
		}
		s.seq.Store(saved.Next)
		for _, f := range saved.Files {
			s.items.Add(f.Items)
			s.bytes.Add(f.Bytes)
		}
	}
	return s
}

// Write implements sink.Sink: it encodes the batch into one of the open
// files and returns; the items are acknowledged when that file is
// durable. Items a resumed run has in a durable file already are
// acknowledged at once.
func (s *Sink) Write(ctx context.Context, batch []*mapping.Item, res sink.Results) error {
	batch = s.skipDurable(batch, res)
	if len(batch) == 0 {
		return nil
	}
	ln := s.lanes[s.next.Add(1)%uint64(len(s.lanes))]
	ln.mu.Lock()
	if ln.f == nil {
		f, err := s.open()
		if err != nil {
			ln.mu.Unlock()
			return err
		}
		ln.f = f
	}
	f := ln.f
	e := f.enc
	added := int64(0)
	for _, it := range batch {
		start := len(e.pending)
		e.pending = AppendItemLine(e.pending, it)
		e.ends = append(e.ends, int32(len(e.pending)))
		n := int64(len(e.pending) - start)
		f.bytes += n
		added += n + pendingOverhead
		// Encoded: the attributes are not needed again (the pipeline
		// reads only Key, Origin and the split fields after Write).
		it.Attrs, it.Body = nil, nil
	}
	f.wait.add(batch, res)
	f.pending += added
	total := s.pending.Add(added)
	if len(e.pending) >= s.opts.ShuffleBytes {
		if err := f.drain(); err != nil {
			ln.mu.Unlock()
			return err
		}
	}
	var full *openFile
	if f.bytes >= s.opts.FileBytes {
		full, ln.f = f, nil
		s.startCommit(full)
	}
	ln.mu.Unlock()
	if full != nil {
		if err := s.commit(ctx, full); err != nil {
			return err
		}
	}
	if total >= s.opts.MaxPendingBytes && s.rotating.CompareAndSwap(false, true) {
		defer s.rotating.Store(false)
		return s.rotate(ctx)
	}
	return nil
}

// rotate commits every open file, in parallel; new files open behind it.
// All of them, not the fullest: a shard's checkpoint moves past a row only
// once every row before it is durable, and rows are spread over every
// lane, so a file left open would hold the positions back (and keep the
// items of the committed files as unsettled).
func (s *Sink) rotate(ctx context.Context) error {
	var taken []*openFile
	for _, ln := range s.lanes {
		ln.mu.Lock()
		if ln.f != nil {
			taken = append(taken, ln.f)
			s.startCommit(ln.f)
			ln.f = nil
		}
		ln.mu.Unlock()
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, f := range taken {
		g.Go(func() error { return s.commit(gctx, f) })
	}
	return g.Wait()
}

// skipDurable acknowledges the items a resumed run finds in a durable file
// already, and returns the rest.
func (s *Sink) skipDurable(batch []*mapping.Item, res sink.Results) []*mapping.Item {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if len(s.skip) == 0 {
		return batch
	}
	var durable []*mapping.Item
	rest := batch[:0:0]
	for _, it := range batch {
		if s.skip[it.Key] {
			delete(s.skip, it.Key)
			durable = append(durable, it)
			s.track(it)
			continue
		}
		rest = append(rest, it)
	}
	if len(durable) > 0 {
		res.Acked(durable)
	}
	return rest
}

func (s *Sink) open() (*openFile, error) {
	n := s.seq.Add(1)
	name := fmt.Sprintf("%s-%06d.json.gz", s.opts.Prefix, n)
	path := filepath.Join(s.dest.SpoolDir(), "."+name+".spool")
	// Owner-only: the file holds rows, and a Dir destination renames it
	// into place with this mode.
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, durable.FileMode)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	f := &openFile{name: name, path: path, fh: fh, sum: sha256.New(), done: make(chan struct{}),
		rng: rand.New(rand.NewPCG(rand.Uint64(), uint64(n)))}
	f.enc = s.encoder(io.MultiWriter(fh, f.sum, &f.size))
	f.wait.reserve(int(s.lastItems.Load()), int(s.lastKeys.Load()))
	return f, nil
}

// encoder returns an idle encoder, or a new one, writing to w.
func (s *Sink) encoder(w io.Writer) *encoder {
	s.emu.Lock()
	var e *encoder
	if n := len(s.encoders); n > 0 {
		e, s.encoders = s.encoders[n-1], s.encoders[:n-1]
	}
	s.emu.Unlock()
	if e == nil {
		e = &encoder{buf: bufio.NewWriterSize(w, 64<<10)}
		e.gz, _ = gzip.NewWriterLevel(e.buf, gzip.BestSpeed)
		return e
	}
	e.buf.Reset(w)
	e.gz.Reset(e.buf)
	return e
}

// release hands an encoder back once its file is written.
func (s *Sink) release(e *encoder) {
	e.buf.Reset(nil)
	e.pending, e.ends = e.pending[:0], e.ends[:0]
	s.emu.Lock()
	s.encoders = append(s.encoders, e)
	s.emu.Unlock()
}

// drain writes the pending lines into the gzip stream in a random order.
func (f *openFile) drain() error {
	e := f.enc
	order := e.order[:0]
	for i := range e.ends {
		order = append(order, int32(i))
	}
	f.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	if e.stage == nil {
		e.stage = make([]byte, 0, stageBytes)
	}
	stage := e.stage[:0]
	for _, i := range order {
		start := int32(0)
		if i > 0 {
			start = e.ends[i-1]
		}
		line := e.pending[start:e.ends[i]]
		if len(stage)+len(line) > cap(stage) {
			if _, err := e.gz.Write(stage); err != nil {
				return fmt.Errorf("writing %s: %w", f.path, err)
			}
			stage = stage[:0]
			if len(line) > cap(stage) {
				if _, err := e.gz.Write(line); err != nil {
					return fmt.Errorf("writing %s: %w", f.path, err)
				}
				continue
			}
		}
		stage = append(stage, line...)
	}
	if _, err := e.gz.Write(stage); err != nil {
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	e.order, e.stage = order[:0], stage[:0]
	e.pending, e.ends = e.pending[:0], e.ends[:0]
	return nil
}

// startCommit takes f out of its lane: its items no longer count as
// pending in open files, and Flush waits for its commit.
func (s *Sink) startCommit(f *openFile) {
	s.pending.Add(-f.pending)
	s.cmu.Lock()
	s.committing[f] = struct{}{}
	s.cmu.Unlock()
}

// commit finishes f, makes it durable and acknowledges its items. A
// failure or cancellation leaves its items unacknowledged (and the spool
// removed): the run reads their rows again.
func (s *Sink) commit(ctx context.Context, f *openFile) (err error) {
	defer func() {
		f.err = err
		s.cmu.Lock()
		delete(s.committing, f)
		s.cmu.Unlock()
		close(f.done)
		if f.enc != nil {
			s.release(f.enc)
			f.enc = nil
		}
		if err != nil {
			f.fh.Close()
			os.Remove(f.path)
		}
	}()
	if err := f.drain(); err != nil {
		return err
	}
	if err := f.enc.gz.Close(); err != nil {
		return err
	}
	if err := f.enc.buf.Flush(); err != nil {
		return err
	}
	// The encoder's buffers (gzip state, pending lines, staging) are
	// reused by the next file, so they go back only here, once the whole
	// stream is in the spool file: an upload and its retries read the
	// file, never the encoder.
	s.release(f.enc)
	f.enc = nil
	if err := f.fh.Sync(); err != nil {
		return err
	}
	if err := f.fh.Close(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.dest.Commit(ctx, f.path, f.name); err != nil {
		return err
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	n := f.wait.len()
	s.lastItems.Store(int64(n))
	s.lastKeys.Store(int64(len(f.wait.keys)))
	s.files = append(s.files, File{Name: f.name, Items: int64(n), Bytes: f.bytes, Size: f.size.n, SHA256: hex.EncodeToString(f.sum.Sum(nil))})
	s.items.Add(int64(n))
	s.bytes.Add(f.bytes)
	f.wait.ack(s.track)
	return nil
}

// track remembers a durable item whose row a resumed run would read again.
// Called under commitMu. Its key points into its file's waitlist, which
// is never reused. The list is pruned of rows the checkpoint has passed
// whenever it has doubled since the last pruning, not only at each
// snapshot: a remembered item keeps its row alive, and the files of one
// rotation, committed one after the other, settle each other's rows
// within moments.
func (s *Sink) track(it *mapping.Item) {
	if c, ok := it.Origin.(sink.Checkpointed); ok && !c.Checkpointed() {
		if len(s.unsettled) >= s.pruneAt {
			s.prune()
		}
		s.unsettled = append(s.unsettled, unsettled{key: it.Key, origin: c})
	}
}

// prune drops the remembered items whose rows are behind the checkpoint.
// Called under commitMu.
func (s *Sink) prune() {
	kept := s.unsettled[:0]
	for _, u := range s.unsettled {
		if !u.origin.Checkpointed() {
			kept = append(kept, u)
		}
	}
	clear(s.unsettled[len(kept):])
	s.unsettled = kept
	s.pruneAt = max(2*len(kept), 4096)
}

// Flush implements sink.Sink: every open file is committed, and commits
// under way are waited for.
func (s *Sink) Flush(ctx context.Context) error {
	s.cmu.Lock()
	var wait []*openFile
	for f := range s.committing {
		wait = append(wait, f)
	}
	s.cmu.Unlock()
	err := s.rotate(ctx)
	for _, f := range wait {
		select {
		case <-f.done:
			if f.err != nil && err == nil {
				err = f.err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

// Close implements sink.Sink: open files are abandoned, their spools
// removed.
func (s *Sink) Close() error {
	for _, ln := range s.lanes {
		ln.mu.Lock()
		if ln.f != nil {
			s.pending.Add(-ln.f.pending)
			ln.f.fh.Close()
			os.Remove(ln.f.path)
			ln.f = nil
		}
		ln.mu.Unlock()
	}
	return nil
}

// Stats implements sink.Sink: Items counts items in durable files, and
// Requests the files (one rename or upload each).
func (s *Sink) Stats() sink.Stats {
	return sink.Stats{Items: s.items.Load(), Requests: int64(len(s.Files()))}
}

// Files returns the durable files so far.
func (s *Sink) Files() []File {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	return append([]File(nil), s.files...)
}

// Snapshot is the checkpoint's hook (checkpoint.FileStore.Attach): the
// state, held still until release.
func (s *Sink) Snapshot() (json.RawMessage, func()) {
	s.commitMu.Lock()
	s.prune()
	st := State{Files: s.files, Next: s.seq.Load()}
	for _, u := range s.unsettled {
		st.Unsettled = append(st.Unsettled, u.key)
	}
	for k := range s.skip {
		st.Unsettled = append(st.Unsettled, k)
	}
	data, err := json.Marshal(st)
	if err != nil {
		panic(err) // plain structs always marshal
	}
	return data, s.commitMu.Unlock
}
