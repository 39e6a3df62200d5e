package verify

import (
	"bytes"
	"hash"
	"hash/fnv"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dynafold/dynafold/mapping"
)

// Collection digests let the key sweep of an incremental run read only
// the part of the table that can hold stale items. A digest is a 64-bit
// FNV-1a hash of the sorted, distinct key records the source makes in one
// collection (partition key). After a successful sweep the mapping's items
// in a collection are among the keys its digest covers; if the source
// makes the same keys again and this run wrote nothing there, no item of
// it can be stale, so only collections whose digest changed, that
// appeared, that vanished, or that this run wrote to are queried.
//
// The records are in the key sweep's framing (appendPK, appendFramed), so
// a digest file is tied to that encoding; a file made under another
// mapping is not used (the caller checks the mapping's fingerprint).

// DigestSource yields the digests a previous sweep recorded, in the byte
// order of their framed partition keys. Next returns ok false at the end.
type DigestSource interface {
	Next() (pk []byte, sum uint64, ok bool, err error)
}

// DigestSink receives this sweep's digests, one per collection the source
// makes, in the byte order of their framed partition keys. The caller
// keeps them only when the whole run succeeds.
type DigestSink interface {
	Add(pk []byte, sum uint64) error
}

// Digests configures a digest sweep (Options.Digests).
type Digests struct {
	// Previous is the digests of the last successful sweep; nil makes the
	// sweep scan every key of the table, as without digests.
	Previous DigestSource
	// Next, if set, receives this sweep's digests.
	Next DigestSink
	// Written are the partition keys of the items this run wrote before
	// the sweep: they are queried whatever their digest says, because the
	// rows that made them may have changed since they were read (MySQL
	// reads each shard in its own snapshot).
	Written []types.AttributeValue
}

// digester groups sorted, distinct key records by partition key and hands
// each collection's digest to emit when the collection ends.
type digester struct {
	h    hash.Hash64
	pk   []byte
	n    int64
	emit func(pk []byte, sum uint64) error
}

func newDigester(emit func(pk []byte, sum uint64) error) *digester {
	return &digester{h: fnv.New64a(), emit: emit}
}

// add takes the next distinct record.
func (d *digester) add(rec []byte) error {
	pk, _ := splitRecord(rec)
	if d.n == 0 || !bytes.Equal(pk, d.pk) {
		if err := d.finish(); err != nil {
			return err
		}
		d.pk = append(d.pk[:0], pk...)
		d.h.Reset()
	}
	d.n++
	// Records are framed, so their concatenation is unambiguous.
	_, _ = d.h.Write(rec)
	return nil
}

// finish emits the digest of the collection under way, if any.
func (d *digester) finish() error {
	if d.n == 0 {
		return nil
	}
	d.n = 0
	return d.emit(d.pk, d.h.Sum64())
}

// writtenPKs returns the framed, sorted, distinct partition keys of vs.
func writtenPKs(vs []types.AttributeValue) [][]byte {
	out := make([][]byte, 0, len(vs))
	for _, v := range vs {
		if _, ok := mapping.KeyIdentity(v); ok {
			out = append(out, appendPK(nil, v))
		}
	}
	slices.SortFunc(out, bytes.Compare)
	return slices.CompactFunc(out, bytes.Equal)
}
