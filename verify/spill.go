package verify

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
)

// sorter collects records (byte strings) from concurrent producers and
// gives them back in byte order, holding a bounded number of bytes.
//
// Why spill to disk: a sweep must know every key the rows make (and a
// table sweep every key of the table), and a migration can have billions
// of them. A Bloom
// filter would bound memory but could call a stale item expected; an
// exact set must live somewhere. So keys are held in memory up to a byte
// budget; past it the batch is sorted and written to a temporary file as a
// run, and reading merges the runs (and what is still held) in order. A
// small run never touches the disk. Disk use is about the keys' size; the
// merge holds one buffered reader per run, and runs beyond maxFanIn are
// first merged into larger ones.
type sorter struct {
	dir    string
	prefix string
	budget int

	mu    sync.Mutex
	held  [][]byte
	bytes int
	runs  []string
	// spilled counts records written to runs, for logs.
	spilled int64
}

// recordOverhead is what holding a record costs besides its bytes: the
// slice header in held and the allocation's rounding.
const recordOverhead = 32

// maxFanIn bounds the runs merged at once (and so the open files and
// read buffers): 64 runs of a 64 MiB budget already cover 4 GiB of keys.
const maxFanIn = 64

// runBuffer sizes the buffered reader and writer of a run file.
const runBuffer = 64 << 10

func newSorter(dir, prefix string, budget int) *sorter {
	return &sorter{dir: dir, prefix: prefix, budget: budget}
}

// add takes ownership of recs.
func (s *sorter) add(recs [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		s.held = append(s.held, r)
		s.bytes += len(r) + recordOverhead
	}
	if s.bytes < s.budget {
		return nil
	}
	return s.spillLocked()
}

// spillLocked writes the held records as one sorted run.
func (s *sorter) spillLocked() error {
	slices.SortFunc(s.held, bytes.Compare)
	path, err := s.writeRun(&memSource{recs: s.held})
	if err != nil {
		return err
	}
	s.runs = append(s.runs, path)
	s.spilled += int64(len(s.held))
	s.held, s.bytes = nil, 0
	return nil
}

// writeRun writes every record of src to a new run file.
func (s *sorter) writeRun(src recordSource) (string, error) {
	f, err := os.CreateTemp(s.dir, "dynafold-"+s.prefix+"-*.run")
	if err != nil {
		return "", fmt.Errorf("creating a spill file for %s keys: %w", s.prefix, err)
	}
	w := bufio.NewWriterSize(f, runBuffer)
	var lenBuf [binary.MaxVarintLen64]byte
	for {
		rec, ok, err := src.next()
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			return "", err
		}
		if !ok {
			break
		}
		n := binary.PutUvarint(lenBuf[:], uint64(len(rec)))
		_, _ = w.Write(lenBuf[:n])
		_, _ = w.Write(rec)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("writing spill file %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("writing spill file %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// iterate returns every record added, in byte order, duplicates included.
// It is called once, after the last add.
func (s *sorter) iterate() (recordSource, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	slices.SortFunc(s.held, bytes.Compare)
	mem := &memSource{recs: s.held}
	s.held, s.bytes = nil, 0
	if len(s.runs) == 0 {
		return mem, nil
	}
	// Merge runs in groups until one merge can take them all.
	for len(s.runs)+1 > maxFanIn {
		group := s.runs[:maxFanIn]
		m, err := openMerge(group, nil)
		if err != nil {
			return nil, err
		}
		path, err := s.writeRun(m)
		m.close()
		if err != nil {
			return nil, err
		}
		for _, p := range group {
			os.Remove(p)
		}
		s.runs = append(s.runs[maxFanIn:], path)
	}
	return openMerge(s.runs, mem)
}

// close removes the run files.
func (s *sorter) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.runs {
		os.Remove(p)
	}
	s.runs, s.held = nil, nil
}

// recordSource yields records in order; ok is false at the end.
type recordSource interface {
	next() (rec []byte, ok bool, err error)
}

// distinct yields the records of a sorted source once each, counting the
// repeats in dupes: the expected keys come sorted, and a key that two rows
// produce comes twice.
type distinct struct {
	src   recordSource
	prev  []byte
	dupes *atomic.Int64
}

func (d *distinct) next() ([]byte, bool, error) {
	for {
		rec, ok, err := d.src.next()
		if err != nil || !ok {
			return nil, ok, err
		}
		if bytes.Equal(rec, d.prev) {
			d.dupes.Add(1)
			continue
		}
		d.prev = rec
		return rec, true, nil
	}
}

type memSource struct {
	recs [][]byte
	i    int
}

func (m *memSource) next() ([]byte, bool, error) {
	if m.i >= len(m.recs) {
		return nil, false, nil
	}
	r := m.recs[m.i]
	m.recs[m.i] = nil // let the merged prefix be collected
	m.i++
	return r, true, nil
}

// fileSource reads a run file.
type fileSource struct {
	f *os.File
	r *bufio.Reader
}

func openRun(path string) (*fileSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading spill file: %w", err)
	}
	return &fileSource{f: f, r: bufio.NewReaderSize(f, runBuffer)}, nil
}

func (fs *fileSource) next() ([]byte, bool, error) {
	n, err := binary.ReadUvarint(fs.r)
	if errors.Is(err, io.EOF) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading spill file %s: %w", fs.f.Name(), err)
	}
	rec := make([]byte, n)
	if _, err := io.ReadFull(fs.r, rec); err != nil {
		return nil, false, fmt.Errorf("reading spill file %s: %w", fs.f.Name(), err)
	}
	return rec, true, nil
}

// merge yields the records of several sorted sources in order.
type merge struct {
	h     mergeHeap
	files []*fileSource
}

type mergeHead struct {
	rec []byte
	src recordSource
}

type mergeHeap []mergeHead

func (h mergeHeap) Len() int           { return len(h) }
func (h mergeHeap) Less(i, j int) bool { return bytes.Compare(h[i].rec, h[j].rec) < 0 }
func (h mergeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)        { *h = append(*h, x.(mergeHead)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// openMerge merges the run files and, when set, one more source.
func openMerge(paths []string, extra recordSource) (*merge, error) {
	m := &merge{}
	srcs := make([]recordSource, 0, len(paths)+1)
	for _, p := range paths {
		fs, err := openRun(p)
		if err != nil {
			m.close()
			return nil, err
		}
		m.files = append(m.files, fs)
		srcs = append(srcs, fs)
	}
	if extra != nil {
		srcs = append(srcs, extra)
	}
	for _, src := range srcs {
		rec, ok, err := src.next()
		if err != nil {
			m.close()
			return nil, err
		}
		if ok {
			m.h = append(m.h, mergeHead{rec: rec, src: src})
		}
	}
	heap.Init(&m.h)
	return m, nil
}

func (m *merge) next() ([]byte, bool, error) {
	if len(m.h) == 0 {
		m.close()
		return nil, false, nil
	}
	top := m.h[0]
	rec, ok, err := top.src.next()
	if err != nil {
		return nil, false, err
	}
	if ok {
		m.h[0].rec = rec
		heap.Fix(&m.h, 0)
	} else {
		heap.Pop(&m.h)
	}
	return top.rec, true, nil
}

func (m *merge) close() {
	for _, fs := range m.files {
		fs.f.Close()
	}
	m.files = nil
}
