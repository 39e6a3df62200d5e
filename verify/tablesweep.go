package verify

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/mapping"
)

// The table sweep (SweepTable, the default of verify, diff and migrate
// --prune, and the key sweep of incremental runs and of a sync's
// resnapshot) reads every item of the table with a parallel Scan, one
// segment per reader, projecting only the key and type attributes. The
// keys are sorted (spilling to disk past the budget, spill.go) and merged
// with the sorted keys the source makes, collection by collection:
//
//   - a key the source makes is the mapping's and not stale;
//   - a key no row makes, of an item the mapping recognises (owner.go), is
//     stale, wherever it is: in collections no row produces any more too,
//     which a Query per produced collection never reads;
//   - an item the mapping does not recognise is counted (OtherItems) and
//     left alone;
//   - an item of an entity read through where: or query:, in a collection
//     no row produces, is counted (OutsideFilter) and left alone: the
//     filter says nothing about it (another tenant's).
//
// The projection cuts what travels, not what is billed: DynamoDB charges a
// Scan for the items it reads, whole, per 4 KB of their summed size.
//
// A target record is the item's key record (keyRecord), then the owning
// entity as two bytes (noOwner when the mapping does not recognise the
// item), then the raw sort-key text to rebuild the key from.

// noOwner marks a target record of an item the mapping does not recognise.
const noOwner = 0xFFFF

// tableSweep scans the table's keys and merges them with the expected ones.
func (c *comparer) tableSweep(ctx context.Context) error {
	target := newSorter(c.opts.TempDir, "target", c.opts.SpillBytes)
	defer target.close()
	start := time.Now()
	if err := c.scanKeys(ctx, target); err != nil {
		return err
	}
	c.spilled.Add(target.spilled)
	c.opts.Logger.Debug("scanned the table's keys", "keys", c.scanned.Load(), "spilled_keys", target.spilled, "seconds", time.Since(start).Seconds())
	exp, err := c.expected.iterate()
	if err != nil {
		return err
	}
	defer closeSource(exp)
	got, err := target.iterate()
	if err != nil {
		return err
	}
	defer closeSource(got)
	m := &tableMerge{c: c, exp: &distinct{src: exp, dupes: &c.tally.dupes}}
	// The digests of the expected keys are recorded on the way, for the
	// next run's digest sweep.
	if d := c.opts.Digests; d != nil && d.Next != nil {
		m.dig = newDigester(func(pk []byte, sum uint64) error {
			c.collections.Add(1)
			if err := d.Next.Add(pk, sum); err != nil {
				return fmt.Errorf("recording the collection digests: %w", err)
			}
			return nil
		})
	}
	return m.run(ctx, got)
}

// tableMerge walks the sorted target records against the sorted, distinct
// expected records.
type tableMerge struct {
	c   *comparer
	exp recordSource
	dig *digester
	// cur is the smallest expected record not yet passed, when have.
	cur  []byte
	have bool
}

func (m *tableMerge) next() error {
	rec, ok, err := m.exp.next()
	if err != nil || !ok {
		m.have = false
		if err == nil && m.dig != nil {
			err = m.dig.finish()
		}
		return err
	}
	m.cur, m.have = rec, true
	if m.dig != nil {
		return m.dig.add(rec)
	}
	return nil
}

// skipBelow passes the expected records below rec.
func (m *tableMerge) skipBelow(rec []byte) error {
	for m.have && bytes.Compare(m.cur, rec) < 0 {
		if err := m.next(); err != nil {
			return err
		}
	}
	return nil
}

func (m *tableMerge) run(ctx context.Context, got recordSource) error {
	c := m.c
	if err := m.next(); err != nil {
		return err
	}
	protect := make([]bool, len(c.in.Plan.Entities))
	for i, ep := range c.in.Plan.Entities {
		protect[i] = ep.Filtered()
	}
	var deletes []map[string]types.AttributeValue
	var grp staleGroup
	var prevPK []byte
	// touched: some row makes an item in the collection; owned: the
	// collection holds an item the mapping recognises (counted as swept).
	var touched, owned bool
	for {
		rec, ok, err := got.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		key, ent, rawSK := c.keys.splitTargetRecord(rec)
		if pk := key[:frameEnd(key)]; !bytes.Equal(pk, prevPK) {
			grp.end(c)
			prevPK = append(prevPK[:0], pk...)
			owned = false
			// The collection's expected records, if any, start at the
			// first one not below its framed partition key.
			if err := m.skipBelow(pk); err != nil {
				return err
			}
			touched = m.have && bytes.HasPrefix(m.cur, pk)
		}
		if ent != noOwner && !owned {
			owned = true
			c.swept.Add(1)
		}
		if err := m.skipBelow(key); err != nil {
			return err
		}
		switch {
		case m.have && bytes.Equal(m.cur, key):
			continue // a row makes it
		case ent == noOwner:
			c.others.Add(1)
			continue
		case !touched && protect[ent]:
			c.outside.Add(1)
			continue
		}
		k := c.keys.decodeKey(key, rawSK)
		item := k
		if !c.opts.KeyOnly && c.tally.wants(ClassStale, c.keys.reportKey(k)) {
			// An example lists the item's attributes, which the Scan did
			// not read: only the few examples are read whole.
			if item, err = c.readItem(ctx, k); err != nil {
				return err
			}
		}
		if err := c.staleItem(ctx, &grp, ent, item, k, &deletes); err != nil {
			return err
		}
	}
	grp.end(c)
	// The rest of the expected keys are not in the table: nothing to delete.
	for m.have {
		if err := m.next(); err != nil {
			return err
		}
	}
	return c.delete(ctx, deletes)
}

// scanKeys reads every key of the table with a parallel Scan (Readers
// segments) projecting the key and type attributes, and adds the records
// of all of them to target, with their owning entity or noOwner.
func (c *comparer) scanKeys(ctx context.Context, target *sorter) error {
	proj, names := c.keyProjection()
	segments := c.opts.Readers
	g, gctx := errgroup.WithContext(ctx)
	for seg := range segments {
		g.Go(func() error {
			in := &dynamodb.ScanInput{
				TableName:                aws.String(c.table),
				ProjectionExpression:     aws.String(proj),
				ExpressionAttributeNames: names,
				ConsistentRead:           aws.Bool(true),
				Segment:                  aws.Int32(int32(seg)),
				TotalSegments:            aws.Int32(int32(segments)),
				ReturnConsumedCapacity:   types.ReturnConsumedCapacityTotal,
			}
			var recs [][]byte
			for {
				out, err := c.in.Target.Scan(gctx, in)
				if err != nil {
					return fmt.Errorf("scanning the keys of table %s (segment %d of %d): %w", c.table, seg, segments, err)
				}
				c.units.add(out.ConsumedCapacity)
				c.scanned.Add(int64(len(out.Items)))
				for _, item := range out.Items {
					rec, ok := c.keys.keyRecord(nil, item)
					if !ok {
						continue
					}
					ent := c.owners.owner(item)
					if ent < 0 {
						ent = noOwner
					}
					rec = binary.BigEndian.AppendUint16(rec, uint16(ent))
					if c.keys.sk != nil {
						raw, _ := mapping.KeyIdentity(item[c.keys.sk.Name])
						rec = append(rec, raw...)
					}
					recs = append(recs, rec)
				}
				if len(recs) >= recordChunk {
					if err := target.add(recs); err != nil {
						return err
					}
					recs = nil
				}
				if len(out.LastEvaluatedKey) == 0 {
					break
				}
				in.ExclusiveStartKey = out.LastEvaluatedKey
			}
			return target.add(recs)
		})
	}
	return g.Wait()
}

// keyProjection returns the projection of the key and type attributes,
// and its attribute names (#pk, #sk, #t).
func (c *comparer) keyProjection() (string, map[string]string) {
	names := map[string]string{"#pk": c.keys.pk.Name}
	proj := "#pk"
	if c.keys.sk != nil {
		names["#sk"] = c.keys.sk.Name
		proj += ", #sk"
	}
	if c.owners.typeAttr != "" {
		names["#t"] = c.owners.typeAttr
		proj += ", #t"
	}
	return proj, names
}

// readItem reads one item whole by its key (a consistent Query on the
// full key), for a stale example; an item gone meanwhile is its key.
func (c *comparer) readItem(ctx context.Context, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	cond := "#pk = :pk"
	names := map[string]string{"#pk": c.keys.pk.Name}
	values := map[string]types.AttributeValue{":pk": key[c.keys.pk.Name]}
	if c.keys.sk != nil {
		cond += " AND #sk = :sk"
		names["#sk"] = c.keys.sk.Name
		values[":sk"] = key[c.keys.sk.Name]
	}
	out, err := c.in.Target.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(c.table),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ConsistentRead:            aws.Bool(true),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return nil, fmt.Errorf("reading stale item %s of table %s: %w", c.keys.describe(key), c.table, err)
	}
	c.units.add(out.ConsumedCapacity)
	if len(out.Items) == 0 {
		return key, nil
	}
	return out.Items[0], nil
}
