package incremental

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dynafold/dynafold/internal/durable"
)

// The digest file remembers, beside the state, the collection digests of
// the last successful key sweep (verify.Digests): one record per
// collection, in the order of the sweep's framed partition keys. It lets
// the next run query only the collections whose keys changed.
//
// Format: the line "dynafold-digests 1\n", the mapping fingerprint
// (uvarint length, bytes), then per collection the framed partition key
// (uvarint length, bytes; never empty) and the digest (8 bytes, big
// endian), then a zero length and the record count (8 bytes), so that a
// truncated file is refused rather than read as a shorter one.
const digestMagic = "dynafold-digests 1\n"

// DigestsFor names the digest file of a state file:
// .dynafold/T.incremental.json → .dynafold/T.incremental.digests.
func DigestsFor(statePath string) string {
	return strings.TrimSuffix(statePath, ".json") + ".digests"
}

// DiscardDigests removes the digest file: a run that writes the table
// without recording digests (a full migrate, --no-deletes) makes them
// untrustworthy.
func DiscardDigests(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the collection digests %s: %w", path, err)
	}
	return nil
}

// DigestReader reads a digest file; it implements verify.DigestSource.
type DigestReader struct {
	f     *os.File
	r     *bufio.Reader
	n     uint64
	done  bool
	pkBuf []byte
}

// OpenDigests opens the digest file recorded under fingerprint. It returns
// nil, nil when there is none or when it was recorded under another
// mapping: the sweep then scans the table.
func OpenDigests(path, fingerprint string) (*DigestReader, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the collection digests: %w", err)
	}
	d := &DigestReader{f: f, r: bufio.NewReaderSize(f, 64<<10)}
	magic := make([]byte, len(digestMagic))
	if _, err := io.ReadFull(d.r, magic); err != nil || string(magic) != digestMagic {
		f.Close()
		return nil, fmt.Errorf("reading the collection digests %s: not a digest file of this dynafold", path)
	}
	fp, err := d.bytes()
	if err != nil {
		f.Close()
		return nil, err
	}
	if string(fp) != fingerprint {
		f.Close()
		return nil, nil
	}
	return d, nil
}

func (d *DigestReader) bytes() ([]byte, error) {
	n, err := binary.ReadUvarint(d.r)
	if err != nil {
		return nil, d.broken(err)
	}
	if cap(d.pkBuf) < int(n) {
		d.pkBuf = make([]byte, n)
	}
	b := d.pkBuf[:n]
	if _, err := io.ReadFull(d.r, b); err != nil {
		return nil, d.broken(err)
	}
	return b, nil
}

func (d *DigestReader) broken(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading the collection digests %s: %w", d.f.Name(), err)
}

// Next implements verify.DigestSource; pk is valid until the next call.
func (d *DigestReader) Next() (pk []byte, sum uint64, ok bool, err error) {
	if d.done {
		return nil, 0, false, nil
	}
	pk, err = d.bytes()
	if err != nil {
		return nil, 0, false, err
	}
	var b [8]byte
	if _, err := io.ReadFull(d.r, b[:]); err != nil {
		return nil, 0, false, d.broken(err)
	}
	if len(pk) == 0 {
		d.done = true
		if binary.BigEndian.Uint64(b[:]) != d.n {
			return nil, 0, false, fmt.Errorf("reading the collection digests %s: the file holds %d records, its trailer says %d", d.f.Name(), d.n, binary.BigEndian.Uint64(b[:]))
		}
		return nil, 0, false, nil
	}
	d.n++
	return pk, binary.BigEndian.Uint64(b[:]), true, nil
}

// Close closes the file.
func (d *DigestReader) Close() error { return d.f.Close() }

// DigestWriter writes a new digest file, which Commit puts in place of
// the old one (durable.Replace); it implements verify.DigestSink.
type DigestWriter struct {
	path string
	r    *durable.Replacement
	w    *bufio.Writer
	n    uint64
	err  error
}

// CreateDigests starts a digest file for path under fingerprint.
func CreateDigests(path, fingerprint string) (*DigestWriter, error) {
	r, err := durable.Replace(path)
	if err != nil {
		return nil, fmt.Errorf("writing the collection digests %s: %w", path, err)
	}
	d := &DigestWriter{path: path, r: r, w: bufio.NewWriterSize(r, 64<<10)}
	d.write([]byte(digestMagic))
	d.bytes([]byte(fingerprint))
	return d, nil
}

func (d *DigestWriter) write(b []byte) {
	if d.err == nil {
		_, d.err = d.w.Write(b)
	}
}

func (d *DigestWriter) bytes(b []byte) {
	d.write(binary.AppendUvarint(nil, uint64(len(b))))
	d.write(b)
}

// Add implements verify.DigestSink.
func (d *DigestWriter) Add(pk []byte, sum uint64) error {
	if len(pk) == 0 {
		return errors.New("a collection digest needs a partition key")
	}
	d.bytes(pk)
	d.write(binary.BigEndian.AppendUint64(nil, sum))
	d.n++
	return d.err
}

// Commit ends the file and puts it in place of the old one, so that a
// crash leaves the old digests or the new ones, never a torn file.
func (d *DigestWriter) Commit() error {
	d.bytes(nil)
	d.write(binary.BigEndian.AppendUint64(nil, d.n))
	if d.err == nil {
		d.err = d.w.Flush()
	}
	if d.err != nil {
		d.r.Abort()
		return fmt.Errorf("writing the collection digests %s: %w", d.path, d.err)
	}
	if err := d.r.Commit(); err != nil {
		d.err = err
		return fmt.Errorf("writing the collection digests %s: %w", d.path, err)
	}
	return nil
}

// Abort removes the temporary file; the old digests stay.
func (d *DigestWriter) Abort() { d.r.Abort() }
