package verify

import (
	"encoding/binary"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
)

// The key sweep (Options.KeyOnly) is the stale detection of incremental
// runs and of a sync's resnapshot. It compares keys only, on both sides:
// the source rows are read with only the columns their table keys are
// rendered from, and the target is swept as any table sweep is
// (tablesweep.go), or through collection digests (digestsweep.go).
//
// Every key record in the sweeps frames the sort key as the partition
// key is framed (appendPK), so that no record is a prefix of another and a
// target record can carry a suffix (the owning entity and the raw sort
// key, to delete it by) without changing the order of the key parts.

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
