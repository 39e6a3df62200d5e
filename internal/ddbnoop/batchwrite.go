package ddbnoop

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
)

// maxBatchRequests is DynamoDB's limit on write requests per BatchWriteItem,
// summed over all tables.
const maxBatchRequests = 25

type rccMode uint8

const (
	rccNone rccMode = iota
	rccTotal
	rccIndexes
)

// writeReq is one PutRequest or DeleteRequest of a batch. Slices point into
// the request body.
type writeReq struct {
	table      int // index into batch.tables
	start, end int // the request's JSON in the body, echoed in UnprocessedItems
	pk, sk     []byte
	pkType     avType
	skType     avType
	size       int
	wcu        int
	gsis       uint64 // bit i: the item is written to table.gsis[i]
	admitted   bool
}

type batchTable struct {
	name []byte // raw, as sent; valid names need no JSON escaping
	t    *table
}

// batch is the per-request state of BatchWriteItem. Batches are pooled so a
// steady stream of requests reuses the same buffers.
type batch struct {
	body   []byte
	out    []byte
	reqs   []writeReq
	tables []batchTable
	rcc    rccMode
}

var batchPool = sync.Pool{New: func() any {
	return &batch{reqs: make([]writeReq, 0, maxBatchRequests), body: make([]byte, 0, 32<<10)}
}}

func (b *batch) reset() {
	b.reqs, b.tables, b.rcc = b.reqs[:0], b.tables[:0], rccNone
}

func (s *Server) batchWriteItem(w http.ResponseWriter, b *batch) {
	s.stats.batchWrites.Add(1)
	if err := s.parseBatch(b); err != nil {
		s.stats.errors.Add(1)
		writeError(w, err)
		return
	}
	s.capacity.admit(b, s.now())

	var admitted, units, gsiUnits, bytes int64
	for i := range b.reqs {
		r := &b.reqs[i]
		if r.admitted {
			admitted++
			units += int64(r.wcu)
			gsiUnits += int64(r.wcu * popcount(r.gsis))
			bytes += int64(r.size)
		}
	}
	if admitted == 0 {
		// DynamoDB fails the whole call, rather than returning every item as
		// unprocessed, when none of it could be written.
		s.stats.throttledRequests.Add(1)
		s.stats.throttledItems.Add(int64(len(b.reqs)))
		writeError(w, errThrottled)
		return
	}
	s.stats.record(s.now(), admitted, units, gsiUnits, bytes, int64(len(b.reqs))-admitted)
	b.out = s.appendBatchResponse(b.out[:0], b)
	writeJSONBody(w, http.StatusOK, b.out)
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// parseBatch parses and validates a BatchWriteItem request into b.
func (s *Server) parseBatch(b *batch) *apiError {
	sc := scanner{b: b.body}
	if !sc.consume('{') {
		return errMalformed
	}
	for first := true; ; first = false {
		name, _, ok, err := sc.member(first)
		if err != nil {
			return errMalformed
		}
		if !ok {
			break
		}
		switch string(name) {
		case "RequestItems":
			err = s.parseRequestItems(&sc, b)
		case "ReturnConsumedCapacity":
			var v []byte
			if v, _, err = sc.str(); err == nil {
				switch string(v) {
				case "TOTAL":
					b.rcc = rccTotal
				case "INDEXES":
					b.rcc = rccIndexes
				}
			}
		default:
			err = sc.skipValue(0)
		}
		if err != nil {
			return asAPIError(err)
		}
	}
	if len(b.reqs) == 0 {
		return validationError("1 validation error detected: Value at 'requestItems' failed to satisfy constraint: " +
			"Member must have length greater than or equal to 1")
	}
	// 25 requests make at most 300 comparisons: cheaper than hashing.
	for i := 1; i < len(b.reqs); i++ {
		for j := 0; j < i; j++ {
			if sameKey(b, &b.reqs[i], &b.reqs[j]) {
				return errDuplicate
			}
		}
	}
	return nil
}

func sameKey(b *batch, x, y *writeReq) bool {
	return b.tables[x.table].t == b.tables[y.table].t &&
		x.pkType == y.pkType && bytes.Equal(x.pk, y.pk) &&
		x.skType == y.skType && bytes.Equal(x.sk, y.sk)
}

// parseRequestItems parses {"table": [WriteRequest, ...], ...}.
func (s *Server) parseRequestItems(sc *scanner, b *batch) error {
	if !sc.consume('{') {
		return errSyntax
	}
	for first := true; ; first = false {
		name, _, ok, err := sc.member(first)
		if err != nil || !ok {
			return err
		}
		t := s.tables.lookup(name)
		if t == nil {
			return notFoundError("Requested resource not found")
		}
		ti := len(b.tables)
		b.tables = append(b.tables, batchTable{name: name, t: t})
		if !sc.consume('[') {
			return errSyntax
		}
		n := 0
		for efirst := true; ; efirst = false {
			ok, err := sc.element(efirst)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if len(b.reqs) == maxBatchRequests {
				return errTooMany
			}
			n++
			sc.skipWS()
			b.reqs = append(b.reqs, writeReq{table: ti, start: sc.pos})
			r := &b.reqs[len(b.reqs)-1]
			if err := parseWriteRequest(sc, t, r); err != nil {
				return err
			}
			r.end = sc.pos
		}
		if n == 0 {
			return validationError("1 validation error detected: Value at 'requestItems' failed to satisfy constraint: " +
				"Map value must satisfy constraint: [Member must have length less than or equal to 25, " +
				"Member must have length greater than or equal to 1]")
		}
	}
}

// parseWriteRequest parses {"PutRequest":{"Item":{...}}} or
// {"DeleteRequest":{"Key":{...}}}.
func parseWriteRequest(sc *scanner, t *table, r *writeReq) error {
	if !sc.consume('{') {
		return errSyntax
	}
	kinds := 0
	for first := true; ; first = false {
		name, _, ok, err := sc.member(first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(name) {
		case "PutRequest":
			err = parseWrapped(sc, "Item", t, r, false)
		case "DeleteRequest":
			err = parseWrapped(sc, "Key", t, r, true)
		default:
			err = sc.skipValue(0)
			kinds-- // unknown members do not count
		}
		if err != nil {
			return err
		}
		kinds++
	}
	if kinds != 1 {
		return validationError("Supplied WriteRequest must contain exactly one of PutRequest or DeleteRequest")
	}
	return nil
}

// parseWrapped parses {"<field>": {attribute map}}.
func parseWrapped(sc *scanner, field string, t *table, r *writeReq, isKey bool) error {
	if !sc.consume('{') {
		return errSyntax
	}
	found := false
	for first := true; ; first = false {
		name, _, ok, err := sc.member(first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if string(name) == field && !found {
			found = true
			err = parseItem(sc, t, r, isKey)
		} else {
			err = sc.skipValue(0)
		}
		if err != nil {
			return err
		}
	}
	if !found {
		return validationError("1 validation error detected: Value null at '" + field + "' failed to satisfy constraint: Member must not be null")
	}
	return nil
}

// parseItem parses an attribute map (an Item or a Key), sizing it and
// validating its key attributes against the table.
func parseItem(sc *scanner, t *table, r *writeReq, isKey bool) error {
	if !sc.consume('{') {
		return errSyntax
	}
	var present uint64
	attrs := 0
	nPrimary := t.nPrimary()
	for first := true; ; first = false {
		name, esc, ok, err := sc.member(first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		attrs++
		nameLen, err := decodedLen(name, esc)
		if err != nil {
			return err
		}
		typ, raw, size, err := sc.attrValue(1)
		if err != nil {
			return err
		}
		r.size += nameLen + size
		k := -1
		if !esc { // key attribute names never need escaping in practice
			k = t.keyIndex(name)
		}
		if k < 0 {
			continue
		}
		ka := &t.keyAttrs[k]
		if typ != ka.typ {
			if k < nPrimary {
				return validationError(fmt.Sprintf("One or more parameter values were invalid: "+
					"Type mismatch for key %s expected: %s actual: %s", ka.name, ka.typ, typ))
			}
			return validationError(fmt.Sprintf("One or more parameter values were invalid: "+
				"Type mismatch for Index Key %s Expected: %s Actual: %s", ka.name, ka.typ, typ))
		}
		if len(raw) == 0 && typ != avN {
			return validationError("One or more parameter values are not valid. " +
				"The AttributeValue for a key attribute cannot contain an empty string value. Key: " + ka.name)
		}
		present |= 1 << k
		switch {
		case k == 0:
			r.pk, r.pkType = raw, typ
		case k == 1 && t.hasSK:
			r.sk, r.skType = raw, typ
		}
	}
	for k := 0; k < nPrimary; k++ {
		if present&(1<<k) == 0 {
			if isKey {
				return errKeySchema
			}
			return validationError("One or more parameter values were invalid: Missing the key " +
				t.keyAttrs[k].name + " in the item")
		}
	}
	if isKey && attrs != nPrimary {
		return errKeySchema
	}
	if r.size > maxItemSize {
		return errItemSize
	}
	r.wcu = writeUnits(r.size)
	if !isKey {
		for i := range t.gsis {
			if need := t.gsis[i].need; present&need == need {
				r.gsis |= 1 << i
			}
		}
	}
	return nil
}
