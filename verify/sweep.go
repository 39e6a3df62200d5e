package verify

import (
	"bytes"
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/mapping"
)

// chunkKeys is how many expected sort keys of one collection travel to a
// sweep worker at once. A worker holds one chunk and its collection's
// channel one more, so the sweep holds at most about
// 2×(Lookups+queued collections)×chunkKeys keys however large a
// collection is.
const chunkKeys = 4096

// maxBatchDeletes: BatchWriteItem accepts at most 25 requests; deletes are
// handed to the Deleter in groups of that size.
const maxBatchDeletes = 25

// The collections sweep (SweepCollections) queries each collection some
// row produces, whole, and merges it with the keys the rows make there.
// It reads only those collections: cheaper than the table sweep when the
// rows cover a small part of a large table, but blind to a collection no
// row produces any more (every row of a customer deleted).

// collection is one item collection to sweep: its partition key and the
// sorted, framed sort-key records of the items the source makes in it,
// streamed in chunks as the merge produces them.
type collection struct {
	pk  types.AttributeValue
	sks chan [][]byte
	// touched is set when some row makes an item in the collection (in a
	// digest sweep, a vanished collection is queried without).
	touched bool
}

// sweepCollections merges the sorted expected keys back into
// collections, queries each touched one and flags items that look like the
// mapping's and are produced by no row.
func (c *comparer) sweepCollections(ctx context.Context) error {
	exp, err := c.expected.iterate()
	if err != nil {
		return err
	}
	defer closeSource(exp)
	var touched recordSource
	if c.touched != nil {
		if touched, err = c.touched.iterate(); err != nil {
			return err
		}
		defer closeSource(touched)
	}
	jobs := make(chan *collection, c.opts.Lookups)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(jobs)
		d := &dispatcher{c: c, exp: exp, touched: touched, jobs: jobs}
		return d.run(gctx)
	})
	// A table without a sort key has one item per collection, the expected
	// one: there is nothing to sweep, only duplicates to count.
	if c.keys.sk != nil {
		for range c.opts.Lookups {
			g.Go(func() error {
				for col := range jobs {
					if err := c.sweepCollection(gctx, col); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	return g.Wait()
}

func closeSource(s recordSource) {
	if m, ok := s.(*merge); ok {
		m.close()
	}
}

// dispatcher walks the sorted expected keys, counts duplicates and hands
// each touched collection to a worker with its keys.
type dispatcher struct {
	c       *comparer
	exp     recordSource
	touched recordSource
	jobs    chan<- *collection
	// tk is the current touched partition key; tdone is set at its end.
	tk    []byte
	tdone bool
}

func (d *dispatcher) run(ctx context.Context) error {
	var curPK []byte
	var cur *collection
	var chunk [][]byte
	send := func() error {
		if cur == nil || len(chunk) == 0 {
			return nil
		}
		select {
		case cur.sks <- chunk:
			chunk = make([][]byte, 0, chunkKeys)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	finish := func() error {
		if cur == nil {
			return nil
		}
		err := send()
		close(cur.sks)
		cur = nil
		return err
	}
	defer func() {
		if cur != nil {
			close(cur.sks)
		}
	}()
	exp := &distinct{src: d.exp, dupes: &d.c.tally.dupes}
	for {
		rec, ok, err := exp.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if d.c.keys.sk == nil {
			continue
		}
		pk, sk := splitRecord(rec)
		if !bytes.Equal(pk, curPK) {
			if err := finish(); err != nil {
				return err
			}
			curPK = pk
			in, err := d.isTouched(pk)
			if err != nil {
				return err
			}
			if in {
				cur = &collection{pk: d.c.keys.decodePK(pk), sks: make(chan [][]byte, 1)}
				select {
				case d.jobs <- cur:
					d.c.swept.Add(1)
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		if cur == nil {
			continue
		}
		chunk = append(chunk, sk)
		if len(chunk) == chunkKeys {
			if err := send(); err != nil {
				return err
			}
		}
	}
	return finish()
}

// isTouched reports whether a sampled row made an item in the collection
// (always, when every row is checked).
func (d *dispatcher) isTouched(pk []byte) (bool, error) {
	if d.touched == nil {
		return true, nil
	}
	for !d.tdone && (d.tk == nil || bytes.Compare(d.tk, pk) < 0) {
		rec, ok, err := d.touched.next()
		if err != nil {
			return false, err
		}
		if !ok {
			d.tdone = true
			break
		}
		d.tk = rec
	}
	return !d.tdone && bytes.Equal(d.tk, pk), nil
}

// expectedStream is the worker's side of a collection's sorted keys.
type expectedStream struct {
	col   *collection
	chunk [][]byte
	i     int
	done  bool
}

// peek returns the smallest expected sort key not yet consumed.
func (s *expectedStream) peek(ctx context.Context) ([]byte, bool, error) {
	for s.i >= len(s.chunk) {
		if s.done {
			return nil, false, nil
		}
		select {
		case ch, ok := <-s.col.sks:
			if !ok {
				s.done = true
				return nil, false, nil
			}
			s.chunk, s.i = ch, 0
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	return s.chunk[s.i], true, nil
}

// drain consumes the rest, so that the dispatcher is never left waiting.
func (s *expectedStream) drain(ctx context.Context) error {
	for {
		s.i = len(s.chunk)
		if _, ok, err := s.peek(ctx); err != nil || !ok {
			return err
		}
	}
}

// sweepCollection queries one collection in sort-key order and merges it
// with the expected keys, which are in the same order: an item whose key
// is not among them, and that looks like the mapping's, is stale.
func (c *comparer) sweepCollection(ctx context.Context, col *collection) error {
	exp := &expectedStream{col: col}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(c.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": c.keys.pk.Name},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": col.pk},
		ConsistentRead:            aws.Bool(true),
	}
	var deletes []map[string]types.AttributeValue
	var grp staleGroup
	var enc, framed []byte
	err := c.queryPages(ctx, in, col.pk, func(items []map[string]types.AttributeValue) error {
		for _, item := range items {
			var ok bool
			if enc, ok = appendSortKey(enc[:0], item[c.keys.sk.Name]); !ok {
				continue
			}
			framed = appendFramed(framed[:0], enc)
			expected, err := exp.skipTo(ctx, framed)
			if err != nil {
				return err
			}
			if expected {
				continue
			}
			ent := c.owners.owner(item)
			if ent < 0 {
				c.others.Add(1) // someone else's item
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

// queryPages reads the collection pk through in (a Query on it) page
// by page, handing each page's items to page.
func (c *comparer) queryPages(ctx context.Context, in *dynamodb.QueryInput, pk types.AttributeValue, page func([]map[string]types.AttributeValue) error) error {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	for {
		out, err := c.in.Target.Query(ctx, in)
		if err != nil {
			return fmt.Errorf("querying collection %s=%s of table %s: %w", c.keys.pk.Name, mapping.KeyText(pk), c.table, err)
		}
		c.units.add(out.ConsumedCapacity)
		if err := page(out.Items); err != nil {
			return err
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// endCollection finishes a collection's sweep after its Query (err): its
// stale items are tallied as a group, the last deletes are sent and the
// expected keys not met are drained.
func (c *comparer) endCollection(ctx context.Context, err error, deletes []map[string]types.AttributeValue, grp *staleGroup, exp *expectedStream) error {
	grp.end(c)
	if err != nil {
		return err
	}
	if err := c.delete(ctx, deletes); err != nil {
		return err
	}
	return exp.drain(ctx)
}

// skipTo consumes the expected keys below enc (a framed sort key) and
// reports whether enc is one of them.
func (s *expectedStream) skipTo(ctx context.Context, enc []byte) (bool, error) {
	for {
		e, ok, err := s.peek(ctx)
		if err != nil || !ok {
			return false, err
		}
		switch cmp := bytes.Compare(e, enc); {
		case cmp < 0:
			s.i++ // expected but not in the table: check found it missing
		case cmp == 0:
			s.i++
			return true, nil
		default:
			return false, nil
		}
	}
}

// stale records a stale item.
func (c *comparer) stale(ent int, item map[string]types.AttributeValue) {
	var f *Finding
	if k := c.keys.reportKey(item); c.tally.wants(ClassStale, k) {
		typ := ""
		if s, ok := item[c.owners.typeAttr].(*types.AttributeValueMemberS); ok && c.owners.typeAttr != "" {
			typ = s.Value
		}
		f = &Finding{Entity: c.in.Plan.Entities[ent].Name, Type: typ, Key: k, Changes: Diff(item, nil)}
	}
	c.tally.found(ClassStale, ent, f)
}

// staleItem counts item, which no source row produces, as stale for entity
// ent, in its collection's group and, when pruning, adds its key to
// deletes, sent once a batch is full (the caller sends the rest at the
// end).
func (c *comparer) staleItem(ctx context.Context, grp *staleGroup, ent int, item, key map[string]types.AttributeValue, deletes *[]map[string]types.AttributeValue) error {
	c.stale(ent, item)
	grp.add(c, ent, item)
	if c.opts.Mode != ModePrune || c.opts.DryRun {
		return nil
	}
	if *deletes = append(*deletes, key); len(*deletes) == maxBatchDeletes {
		if err := c.delete(ctx, *deletes); err != nil {
			return err
		}
		*deletes = nil
	}
	return nil
}

func (c *comparer) delete(ctx context.Context, keys []map[string]types.AttributeValue) error {
	if len(keys) == 0 {
		return nil
	}
	if err := c.opts.Delete.Delete(ctx, keys); err != nil {
		return fmt.Errorf("deleting stale items from table %s: %w", c.table, err)
	}
	c.deleted.Add(int64(len(keys)))
	return nil
}
