package plan

import (
	"fmt"
	"math"

	"github.com/dynafold/dynafold/internal/render"
)

// The data findings that need the whole scan (item collections, hot keys,
// the count of unlisted findings) and the statement of methods.

// moreFindings says how many findings of a kind were not listed.
func (a *aggregator) moreFindings() []Finding {
	var out []Finding
	for _, f := range a.fs {
		key := string(f.Severity) + "\x00" + f.Check
		if n := a.more[key]; n > 0 {
			out = append(out, Finding{Severity: f.Severity, Origin: Data, Check: f.Check, Message: fmt.Sprintf("%d more like the above are not listed", n)})
			delete(a.more, key)
		}
	}
	return out
}

// collectionFindings checks item collections against the local-index
// limit.
func (a *aggregator) collectionFindings(scale float64) []Finding {
	if !a.hasLSI {
		return nil
	}
	var fs findings
	lim := a.opts.Limits.LSICollectionBytes
	tbl := a.p.Table
	over, sure := a.tbl.pk.over(wBytes, int64(float64(lim)/scale))
	for i, k := range over {
		size := int64(math.Round(float64(k.Bytes) * scale))
		if sure[i] {
			fs.add(Error, Data, "limit.lsi_collection", "target.indexes", "",
				"item collection %s=%q is %s (its items plus their local-index entries); with a local index an item collection is at most %s",
				tbl.PK.Name, k.Key, render.Bytes(size), render.Bytes(lim))
		} else {
			fs.add(Warning, Data, "limit.lsi_collection", "target.indexes", "",
				"item collection %s=%q may exceed %s: heavy-hitter tracking puts it between %s and %s",
				tbl.PK.Name, k.Key, render.Bytes(lim), render.Bytes(int64(float64(k.Bytes-k.Overstated)*scale)), render.Bytes(size))
		}
	}
	return fs
}

// hotKeyFindings flags partition-key values that would need more than a
// partition's write rate while the load runs. A value holding less than
// one second of a partition's capacity is not flagged: a burst that short
// is absorbed by retries.
func (a *aggregator) hotKeyFindings(sc func(int64) int64, loadSeconds float64) []Finding {
	var fs findings
	if loadSeconds <= 0 {
		return nil
	}
	pw := a.opts.Limits.PartitionWCU
	check := func(c *keyCounter, where, attr, path string, items int64) {
		for _, k := range c.top(wUnits, a.opts.Top) {
			// Judge by what the key surely holds, so that an overstated
			// heavy-hitter count raises no false alarm.
			units := sc(k.WriteUnits - k.Overstated)
			perSecond := float64(units) / loadSeconds
			if float64(units) <= pw || perSecond <= pw {
				continue
			}
			share := ""
			if k.Items >= 0 && items > 0 {
				share = fmt.Sprintf(" holds %.1f%% of its entries (%s of %s) and", 100*float64(k.Items)/float64(items), num(sc(k.Items)), num(sc(items)))
			}
			fs.add(Warning, Data, "partition.hot", path, "",
				"%s value %s=%q%s takes %s%s write units: spread over the load it would need %s write units per second, more than the %s a partition accepts, so writes to it throttle and the load takes at least %s; spread it, e.g. with a write-shard suffix (${…|shard:N})",
				where, attr, k.Key, share, atLeast(k.Overstated), num(units), num(int64(math.Round(perSecond))), rate(pw), render.Seconds(float64(units)/pw))
		}
	}
	tbl := a.p.Table
	check(a.tbl.pk, "table "+tbl.Name+" partition key", tbl.PK.Name, "target.key.pk", a.tbl.items)
	for j, s := range a.shapes {
		if s.ix.Global {
			check(a.idx[j].pk, "index "+s.ix.Name+" partition key", s.ix.PK.Name, "target.indexes."+s.ix.Name+".pk", a.idx[j].items)
		}
	}
	return fs
}

// methods states how each figure was obtained.
func (a *aggregator) methods(opts Options) []string {
	out := []string{
		"item sizes follow DynamoDB's rules (attribute names plus values); p50 and p99 come from a log-linear histogram, exact below 1 KB and at most 0.8% above the true value beyond; min and max are exact",
		"write units: each item costs ceil(size / 1 KB) in the table (the write_units migrate reports) and again in every index it is projected into",
		"index entries: an item is in an index only when it has every key attribute of the index (sparse indexes); an entry is the whole item for projection ALL, the table and index keys for KEYS_ONLY, and those plus the included attributes for INCLUDE",
	}
	exact := a.tbl.pk.isExact()
	for _, ia := range a.idx {
		if ia.pk != nil && !ia.pk.isExact() {
			exact = false
		}
	}
	if exact {
		out = append(out, fmt.Sprintf("partition-key values are counted exactly (up to %s distinct values per key space, --max-keys)", num(opts.MaxKeys)))
	} else {
		out = append(out, fmt.Sprintf("partition-key values are counted exactly up to %s distinct values per key space (--max-keys); beyond, the heaviest values are tracked with Space-Saving (%s counters), each count an upper bound overstating by at most its overstated_by figure (at most the total over %s), and distinct values are estimated with HyperLogLog (about 0.8%% error)",
			num(opts.MaxKeys), num(opts.HeavyHitters), num(opts.HeavyHitters)))
	}
	if a.hasLSI {
		out = append(out, "item collections: the items of one partition-key value plus their entries in every local index, as DynamoDB counts against the 10 GB limit")
	}
	d := a.dup
	n := float64(len(d.seen))
	dup := fmt.Sprintf("duplicate keys: every item key is kept as a 64-bit hash (up to %s keys, --max-dup-keys); a hash collision could report a false duplicate with probability below %.1g", num(d.limit), n*n/math.Pow(2, 65))
	if d.unchecked > 0 {
		dup += fmt.Sprintf("; %s keys arrived after the set was full and were checked only against the earlier ones, so duplicates among them are not counted", num(d.unchecked))
	}
	out = append(out, dup)
	out = append(out,
		"duration: table write units over the write rate; an index with provisioned capacity or the hottest partition (1,000 write units per second each) can only make it longer",
		"hot keys: a partition-key value is flagged when, spread evenly over the load, it would need more than a partition's 1,000 write units per second and holds more than one second of them",
		"storage: item sizes plus DynamoDB's 100 bytes of overhead per item, in the table and in each index",
	)
	return out
}
