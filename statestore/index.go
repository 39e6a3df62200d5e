package statestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/dynafold/dynafold/internal/durable"
)

// rowIndex records, per entity row, the keys of the items the table holds
// for it: what a re-derived row must delete when it no longer produces a
// key. File keeps it in a local bbolt file beside the sync checkpoint.
//
// Writes are two-phase so that a crash never forgets a key the table may
// hold: before a round writes, each row's entry becomes the union of its
// old and new keys (intent); after DynamoDB acknowledges the round, the
// entry becomes exactly the new keys. A crash between the two leaves the
// union, so a replay deletes whatever the interrupted round may have put.
//
// The file is written without fsync on each commit: a killed process
// loses nothing the kernel holds. Sync makes it durable on power loss; File
// calls it before each save of the state or the load checkpoint, so the
// index is never older than the position they record.
type rowIndex struct {
	db *bolt.DB
}

func openIndex(path string) (*rowIndex, error) {
	db, err := bolt.Open(path, durable.FileMode, &bolt.Options{Timeout: 2 * time.Second, NoSync: true, NoFreelistSync: true})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("row index %s is locked by another process (another dynafold sync of this table?)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("opening row index %s: %w", path, err)
	}
	return &rowIndex{db: db}, nil
}

func (ix *rowIndex) Close() error { return ix.db.Close() }

// Sync makes every committed change durable, then lets go of the pages of
// the file this process has read. bbolt reads through a shared, read-only
// mapping of the whole file (it writes with pwrite), and every page a
// lookup touched stays in the process's resident set: an initial load of
// 5 million rows grows the file to 544 MiB and sync's peak RSS to 396 MiB,
// although its anonymous memory stays near 110 MiB. The pages are the kernel's page
// cache either way; dropping them from the mapping (they are read back
// from the cache on the next touch) keeps the resident set to what the
// process holds. The mapping is read inside a read transaction, which
// holds bbolt's mmap lock, so it cannot be remapped meanwhile.
func (ix *rowIndex) Sync() error {
	if err := ix.db.Sync(); err != nil {
		return err
	}
	return ix.db.View(func(tx *bolt.Tx) error {
		releaseMapping(ix.db.Info().Data, uintptr(tx.Size()))
		return nil
	})
}

// update runs fn in one write transaction.
func (ix *rowIndex) update(fn func(*indexTx) error) error {
	return ix.db.Update(func(tx *bolt.Tx) error { return fn(&indexTx{tx: tx}) })
}

// view runs fn in one read transaction.
func (ix *rowIndex) view(fn func(*indexTx) error) error {
	return ix.db.View(func(tx *bolt.Tx) error { return fn(&indexTx{tx: tx}) })
}

type indexTx struct{ tx *bolt.Tx }

// keysOf sets out[i] to the item keys recorded for rows[i] (nil: none).
// It finds the entity's bucket once and moves one cursor from row to
// row: a Get per row looks the bucket up again and allocates a cursor
// and its path each time, which were a tenth of sync's allocations when
// a round fans out to hundreds of thousands of rows (sorted rows, as a
// round reads them, also walk the tree forward).
func (t *indexTx) keysOf(entity string, rows [][]byte, out [][]string) {
	b := t.tx.Bucket([]byte(entity))
	if b == nil {
		return
	}
	c := b.Cursor()
	for i, r := range rows {
		if k, v := c.Seek(r); bytes.Equal(k, r) {
			out[i] = decodeKeys(v)
		}
	}
}

// set records a row's item keys; none removes the row.
func (t *indexTx) set(entity string, row []byte, keys []string) error {
	b, err := t.tx.CreateBucketIfNotExists([]byte(entity))
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return b.Delete(row)
	}
	return b.Put(row, encodeKeys(keys))
}

func encodeKeys(keys []string) []byte {
	n := binary.MaxVarintLen64
	for _, k := range keys {
		n += binary.MaxVarintLen64 + len(k)
	}
	out := make([]byte, 0, n)
	out = binary.AppendUvarint(out, uint64(len(keys)))
	for _, k := range keys {
		out = binary.AppendUvarint(out, uint64(len(k)))
		out = append(out, k...)
	}
	return out
}

func decodeKeys(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	n, w := binary.Uvarint(b)
	b = b[w:]
	out := make([]string, 0, n)
	for i := uint64(0); i < n && len(b) > 0; i++ {
		l, w := binary.Uvarint(b)
		b = b[w:]
		out = append(out, string(b[:l]))
		b = b[l:]
	}
	return out
}

// clear removes every row's keys: a resnapshot's load records them anew.
func (ix *rowIndex) clear() error {
	return ix.db.Update(func(tx *bolt.Tx) error {
		var names [][]byte
		if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, append([]byte(nil), name...))
			return nil
		}); err != nil {
			return err
		}
		for _, n := range names {
			if err := tx.DeleteBucket(n); err != nil {
				return err
			}
		}
		return nil
	})
}
