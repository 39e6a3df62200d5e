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

// The key sweep (Options.KeyOnly) is the stale detection of incremental
// runs. It compares keys only, on both sides: the source rows are read
// with only the columns their table keys are rendered from, and the
// target is read with a parallel Scan projecting only the key and type
// attributes. Both key sets are sorted (spilling past the budget), so the
// comparison walks them collection by collection; unlike the Query per
// touched collection of verify's sweep, it also finds the items of a
// collection none of whose rows is left.
//
// The record of a key in this sweep frames the sort key as the partition
// key is framed (appendPK), so that no record is a prefix of another and a
// target record can carry a suffix (the owning entity and the raw sort
// key, to delete it by) without changing the order of the key parts.

// ScanAPI is the part of the DynamoDB client the key sweep scans with.
type ScanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// keyOnlyPlans returns, per entity, the plan the check reads in key-only
// mode, and whether it is key-only (an entity whose keys need its nested
// rows is read in full).
func keyOnlyPlans(p *mapping.Plan) ([]*mapping.EntityPlan, []bool) {
	plans := make([]*mapping.EntityPlan, len(p.Entities))
	keyOnly := make([]bool, len(p.Entities))
	for i, ep := range p.Entities {
		if kp, ok := ep.KeysOnly(); ok {
			plans[i], keyOnly[i] = kp, true
		} else {
			plans[i] = ep
		}
	}
	return plans, keyOnly
}

// keyRecord appends the key sweep's record of an item's key; ok is false
// when a key attribute is missing or of another type.
func (k keySchema) keyRecord(dst []byte, item map[string]types.AttributeValue) ([]byte, bool) {
	pk := item[k.pk.Name]
	if _, ok := mapping.KeyIdentity(pk); !ok {
		return dst, false
	}
	dst = appendPK(dst, pk)
	if k.sk == nil {
		return dst, true
	}
	enc, ok := appendSortKey(nil, item[k.sk.Name])
	if !ok {
		return dst, false
	}
	return appendFramed(dst, enc), true
}

// appendFramed appends b framed as appendPK frames a partition key.
func appendFramed(dst, b []byte) []byte {
	for _, c := range b {
		if c == escByte {
			dst = append(dst, escByte, escZero)
			continue
		}
		dst = append(dst, c)
	}
	return append(dst, escByte, escTerminal)
}

// frameEnd returns the index just past the first frame of rec.
func frameEnd(rec []byte) int {
	for i := 0; i+1 < len(rec); i++ {
		if rec[i] != escByte {
			continue
		}
		if rec[i+1] == escTerminal {
			return i + 2
		}
		i++
	}
	return len(rec)
}

// splitTargetRecord returns a target record's key part, owning entity and
// raw sort-key text.
func (k keySchema) splitTargetRecord(rec []byte) (key []byte, ent int, rawSK []byte) {
	n := frameEnd(rec)
	if k.sk != nil {
		n += frameEnd(rec[n:])
	}
	return rec[:n], int(binary.BigEndian.Uint16(rec[n : n+2])), rec[n+2:]
}

// decodeKey rebuilds a target record's key attributes.
func (k keySchema) decodeKey(key, rawSK []byte) map[string]types.AttributeValue {
	out := map[string]types.AttributeValue{k.pk.Name: k.decodePK(key[:frameEnd(key)])}
	if k.sk != nil {
		raw := append([]byte(nil), rawSK...)
		switch k.sk.Type {
		case mapping.TypeN:
			out[k.sk.Name] = &types.AttributeValueMemberN{Value: string(raw)}
		case mapping.TypeB:
			out[k.sk.Name] = &types.AttributeValueMemberB{Value: raw}
		default:
			out[k.sk.Name] = &types.AttributeValueMemberS{Value: string(raw)}
		}
	}
	return out
}

// keySweep scans the target's keys, sorts the mapping's items among them
// and merges them with the sorted expected keys: a target key no row
// makes is stale.
func (c *comparer) keySweep(ctx context.Context) error {
	scanner, ok := c.in.Target.(ScanAPI)
	if !ok {
		return fmt.Errorf("the key sweep needs a target that can Scan, not %T", c.in.Target)
	}
	target := newSorter(c.opts.TempDir, "target", c.opts.SpillBytes)
	defer target.close()
	start := time.Now()
	if err := c.scanKeys(ctx, scanner, target); err != nil {
		return err
	}
	c.opts.Logger.Debug("scanned the table's keys", "keys", c.scanned.Load(), "seconds", time.Since(start).Seconds())
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

	// The digests of the expected keys are recorded on the way, for the
	// next run's digest sweep.
	var dig *digester
	if d := c.opts.Digests; d != nil && d.Next != nil {
		dig = newDigester(func(pk []byte, sum uint64) error {
			c.collections.Add(1)
			if err := d.Next.Add(pk, sum); err != nil {
				return fmt.Errorf("recording the collection digests: %w", err)
			}
			return nil
		})
	}
	uniq := &distinct{src: exp, dupes: &c.tally.dupes}
	var cur []byte
	var haveCur bool
	nextExp := func() error {
		rec, ok, err := uniq.next()
		if err != nil || !ok {
			haveCur = false
			if err == nil && dig != nil {
				err = dig.finish()
			}
			return err
		}
		cur, haveCur = rec, true
		if dig != nil {
			return dig.add(rec)
		}
		return nil
	}
	if err := nextExp(); err != nil {
		return err
	}
	// An item of a filtered entity (where:, query:) is stale only in a
	// collection some row makes: the collections of the rows the filter
	// leaves out are not this run's to sweep.
	protect := make([]bool, len(c.in.Plan.Entities))
	for i, ep := range c.in.Plan.Entities {
		protect[i] = ep.Filtered()
	}
	var deletes []map[string]types.AttributeValue
	var prevPK []byte
	var touched bool
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
			prevPK = append(prevPK[:0], pk...)
			c.swept.Add(1)
			// The expected records of this collection, if any, start at
			// the first one not below its framed partition key.
			for haveCur && bytes.Compare(cur, pk) < 0 {
				if err := nextExp(); err != nil {
					return err
				}
			}
			touched = haveCur && bytes.HasPrefix(cur, pk)
		}
		for haveCur && bytes.Compare(cur, key) < 0 {
			if err := nextExp(); err != nil {
				return err
			}
		}
		if haveCur && bytes.Equal(cur, key) {
			continue
		}
		if !touched && ent < len(protect) && protect[ent] {
			continue
		}
		item := c.keys.decodeKey(key, rawSK)
		if err := c.staleItem(ctx, ent, item, item, &deletes); err != nil {
			return err
		}
	}
	// The rest of the expected keys are not in the table: nothing to delete.
	for haveCur {
		if err := nextExp(); err != nil {
			return err
		}
	}
	return c.delete(ctx, deletes)
}

// scanKeys reads every key of the table with a parallel Scan (one segment
// per lookup worker) projecting the key and type attributes, and adds the
// records of the items that look like the mapping's to target.
func (c *comparer) scanKeys(ctx context.Context, api ScanAPI, target *sorter) error {
	proj, names := c.keyProjection()
	segments := c.opts.Lookups
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
			}
			var recs [][]byte
			for {
				out, err := api.Scan(gctx, in)
				if err != nil {
					return fmt.Errorf("scanning the keys of table %s: %w", c.table, err)
				}
				c.scanned.Add(int64(len(out.Items)))
				for _, item := range out.Items {
					ent := c.owners.owner(item)
					if ent < 0 {
						continue // someone else's item
					}
					rec, ok := c.keys.keyRecord(nil, item)
					if !ok {
						continue
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
