package verify

import (
	"bytes"
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"
)

// digestSweep is the key sweep with remembered digests (see digest.go).
// The first pass walks the sorted expected keys once: it computes each
// collection's digest, hands it to Digests.Next, compares it with the
// previous one, and keeps the collections to query (changed, appeared,
// vanished, written) with their expected keys. The second pass queries
// each of them, key-only, and merges the result with its expected keys.
// Both kept sets go through sorters, so memory stays bounded whatever
// share of the table changed.
func (c *comparer) digestSweep(ctx context.Context) error {
	exp, err := c.expected.iterate()
	if err != nil {
		return err
	}
	defer closeSource(exp)
	pks := newSorter(c.opts.TempDir, "queried-collections", c.opts.SpillBytes)
	keys := newSorter(c.opts.TempDir, "queried-keys", c.opts.SpillBytes)
	defer func() {
		c.spilled.Add(pks.spilled + keys.spilled)
		pks.close()
		keys.close()
	}()
	p := &digestPass{c: c, prev: c.opts.Digests.Previous, next: c.opts.Digests.Next,
		written: writtenPKs(c.opts.Digests.Written), pks: pks, keys: keys}
	if err := p.run(exp); err != nil {
		return err
	}
	return c.queryCollections(ctx, pks, keys)
}

// digestPass is the first pass of a digest sweep.
type digestPass struct {
	c    *comparer
	prev DigestSource
	next DigestSink
	// ppk and psum are the previous digest under the cursor; phave is
	// false once the previous digests are exhausted.
	ppk   []byte
	psum  uint64
	phave bool
	// written are the framed partition keys written by this run; wi the
	// first not yet placed.
	written [][]byte
	wi      int
	// group holds the expected records of the collection under way; eager
	// is set once it grew past chunkKeys and went to keys unconditionally
	// (the second pass skips the records of collections it does not query).
	group      [][]byte
	eager      bool
	pks, keys  *sorter
	queryBatch [][]byte
}

func (p *digestPass) advance() error {
	if p.prev == nil {
		p.phave = false
		return nil
	}
	pk, sum, ok, err := p.prev.Next()
	if err != nil {
		return fmt.Errorf("reading the previous collection digests: %w", err)
	}
	p.ppk, p.psum, p.phave = append(p.ppk[:0], pk...), sum, ok
	return nil
}

func (p *digestPass) run(exp recordSource) error {
	if err := p.advance(); err != nil {
		return err
	}
	d := newDigester(p.collectionEnd)
	exp = &distinct{src: exp, dupes: &p.c.tally.dupes}
	for {
		rec, ok, err := exp.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if err := d.add(rec); err != nil {
			return err
		}
		if p.group = append(p.group, rec); len(p.group) >= chunkKeys {
			if err := p.keys.add(p.group); err != nil {
				return err
			}
			p.group, p.eager = nil, true
		}
	}
	if err := d.finish(); err != nil {
		return err
	}
	// What is left of the previous digests vanished; what is left of the
	// written keys lies past the last collection.
	if err := p.placeUpTo(nil); err != nil {
		return err
	}
	return p.pks.add(p.queryBatch)
}

// collectionEnd is called with the digest of each collection the source
// makes, in order, before the first record of the next one is grouped.
func (p *digestPass) collectionEnd(pk []byte, sum uint64) error {
	p.c.collections.Add(1)
	if p.next != nil {
		if err := p.next.Add(pk, sum); err != nil {
			return fmt.Errorf("recording the collection digests: %w", err)
		}
	}
	if err := p.placeUpTo(pk); err != nil {
		return err
	}
	query := true
	if p.phave && bytes.Equal(p.ppk, pk) {
		query = p.psum != sum
		if err := p.advance(); err != nil {
			return err
		}
	}
	if query {
		p.c.changed.Add(1)
	}
	if p.wi < len(p.written) && bytes.Equal(p.written[p.wi], pk) {
		p.wi++
		query = true
	}
	group := p.group
	p.group = nil
	if query {
		p.queue(pk)
	}
	if query || p.eager {
		p.eager = false
		return p.keys.add(group)
	}
	p.eager = false
	return nil
}

// placeUpTo queues the previous digests' collections below pk (they
// vanished) and the written collections below pk (no row makes them any
// more); a nil pk places all that is left.
func (p *digestPass) placeUpTo(pk []byte) error {
	for p.phave && (pk == nil || bytes.Compare(p.ppk, pk) < 0) {
		p.c.vanished.Add(1)
		p.queue(p.ppk)
		if err := p.advance(); err != nil {
			return err
		}
	}
	for p.wi < len(p.written) && (pk == nil || bytes.Compare(p.written[p.wi], pk) < 0) {
		p.queue(p.written[p.wi])
		p.wi++
	}
	if len(p.queryBatch) >= recordChunk {
		if err := p.pks.add(p.queryBatch); err != nil {
			return err
		}
		p.queryBatch = nil
	}
	return nil
}

func (p *digestPass) queue(pk []byte) {
	p.queryBatch = append(p.queryBatch, append([]byte(nil), pk...))
}

// queryCollections is the second pass: it hands each collection to query
// to a worker with its expected keys, as sweep does.
func (c *comparer) queryCollections(ctx context.Context, pks, keys *sorter) error {
	qs, err := pks.iterate()
	if err != nil {
		return err
	}
	defer closeSource(qs)
	ks, err := keys.iterate()
	if err != nil {
		return err
	}
	defer closeSource(ks)
	jobs := make(chan *collection, c.opts.Lookups)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(jobs)
		return c.dispatchQueried(gctx, qs, ks, jobs)
	})
	for range c.opts.Lookups {
		g.Go(func() error {
			for col := range jobs {
				if err := c.queryCollection(gctx, col); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// dispatchQueried merges the sorted collections to query with the sorted
// expected keys kept for them.
func (c *comparer) dispatchQueried(ctx context.Context, qs, ks recordSource, jobs chan<- *collection) error {
	cur, have, err := ks.next()
	if err != nil {
		return err
	}
	var last []byte
	for {
		pk, ok, err := qs.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if bytes.Equal(pk, last) {
			continue
		}
		last = pk
		for have && bytes.Compare(cur, pk) < 0 {
			if cur, have, err = ks.next(); err != nil {
				return err
			}
		}
		col := &collection{pk: c.keys.decodePK(pk), sks: make(chan [][]byte, 1), touched: have && bytes.HasPrefix(cur, pk)}
		select {
		case jobs <- col:
			c.swept.Add(1)
		case <-ctx.Done():
			return ctx.Err()
		}
		err = func() error {
			defer close(col.sks)
			chunk := make([][]byte, 0, chunkKeys)
			for have && bytes.HasPrefix(cur, pk) {
				_, sk := splitRecord(cur)
				if chunk = append(chunk, sk); len(chunk) == chunkKeys {
					if err := sendChunk(ctx, col, chunk); err != nil {
						return err
					}
					chunk = make([][]byte, 0, chunkKeys)
				}
				if cur, have, err = ks.next(); err != nil {
					return err
				}
			}
			if len(chunk) == 0 {
				return nil
			}
			return sendChunk(ctx, col, chunk)
		}()
		if err != nil {
			return err
		}
	}
}

func sendChunk(ctx context.Context, col *collection, chunk [][]byte) error {
	select {
	case col.sks <- chunk:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queryCollection queries one collection key-only and merges it with its
// expected keys (framed sort keys, in order). In a collection no row makes
// (not touched), the items of filtered entities are spared, as in the scan.
func (c *comparer) queryCollection(ctx context.Context, col *collection) error {
	exp := &expectedStream{col: col}
	proj, names := c.keyProjection()
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(c.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ProjectionExpression:      aws.String(proj),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": col.pk},
		ConsistentRead:            aws.Bool(true),
	}
	var deletes []map[string]types.AttributeValue
	var grp staleGroup
	var enc, framed []byte
	err := c.queryPages(ctx, in, col.pk, func(items []map[string]types.AttributeValue) error {
		c.read.Add(int64(len(items)))
		for _, item := range items {
			expected := col.touched
			if c.keys.sk != nil {
				var ok bool
				if enc, ok = appendSortKey(enc[:0], item[c.keys.sk.Name]); !ok {
					continue
				}
				framed = appendFramed(framed[:0], enc)
				var err error
				if expected, err = exp.skipTo(ctx, framed); err != nil {
					return err
				}
			}
			if expected {
				continue
			}
			ent := c.owners.owner(item)
			switch {
			case ent < 0:
				c.others.Add(1) // someone else's item
				continue
			case !col.touched && c.in.Plan.Entities[ent].Filtered():
				c.outside.Add(1) // outside the filter's collections
				continue
			}
			if err := c.staleItem(ctx, &grp, ent, item, c.keys.key(item), &deletes); err != nil {
				return err
			}
		}
		return nil
	})
	return c.endCollection(ctx, err, deletes, &grp, exp)
}
