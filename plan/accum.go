package plan

import (
	"container/heap"

	"github.com/dynafold/dynafold/mapping"
)

// aggregator folds observations into totals. It runs in one goroutine.
type aggregator struct {
	p      *mapping.Plan
	shapes []indexShape
	opts   Options
	ents   []*entAcc
	tbl    tableAcc
	idx    []*idxAcc
	dup    *dupSet
	large  largestItems
	fs     findings
	listed map[string]int
	more   map[string]int64
	// hasLSI: collections are limited to 10 GB.
	hasLSI bool
}

type entAcc struct {
	read, rows, rowErrors, overLimit int64
	items, bytes, units              int64
	idxItems, idxUnits               []int64
	sizes                            histogram
	maxPK, maxSK                     int
	// split aggregates: heads, parts, most parts of one, largest part
	splitItems, splitParts int64
	maxParts, maxPartBytes int
}

type tableAcc struct {
	items, bytes, units int64
	sizes               histogram
	maxPK, maxSK        int
	pk                  *keyCounter
}

type idxAcc struct {
	items, bytes, units int64
	maxPK               int
	pk                  *keyCounter // global indexes only
	// half counts, per entity, items with only half the index's key, and
	// keeps the smallest source key of one (the same whatever order rows
	// arrive in).
	half        map[string]int64
	halfExample map[string]string
	// sparse and sparseExample are the same for items left out of an
	// index their entity marks sparse: true.
	sparse        map[string]int64
	sparseExample map[string]string
}

func newAggregator(p *mapping.Plan, shapes []indexShape, opts Options) *aggregator {
	a := &aggregator{p: p, shapes: shapes, opts: opts, dup: newDupSet(opts.MaxDupKeys), listed: map[string]int{}, more: map[string]int64{}}
	a.tbl.pk = newKeyCounter(opts.MaxKeys, opts.HeavyHitters)
	for range p.Entities {
		a.ents = append(a.ents, &entAcc{idxItems: make([]int64, len(shapes)), idxUnits: make([]int64, len(shapes))})
	}
	for _, s := range shapes {
		ia := &idxAcc{half: map[string]int64{}, halfExample: map[string]string{}, sparse: map[string]int64{}, sparseExample: map[string]string{}}
		if s.ix.Global {
			ia.pk = newKeyCounter(opts.MaxKeys, opts.HeavyHitters)
		} else {
			a.hasLSI = true
		}
		a.idx = append(a.idx, ia)
	}
	a.large.n = opts.Top
	return a
}

// finding records a data finding, listing at most MaxListed per check.
func (a *aggregator) finding(sev Severity, check, path, entity, format string, args ...any) {
	key := string(sev) + "\x00" + check
	if a.listed[key] >= a.opts.MaxListed {
		a.more[key]++
		return
	}
	a.listed[key]++
	a.fs.add(sev, Data, check, path, entity, format, args...)
}

func (a *aggregator) add(batch []rowObs) {
	for i := range batch {
		ro := &batch[i]
		if ro.ent < 0 { // read but outside the sample
			a.ents[-1-ro.ent].read++
			continue
		}
		ep := a.p.Entities[ro.ent]
		e := a.ents[ro.ent]
		e.read++
		e.rows++
		path := "entities." + ep.Name
		switch {
		case ro.rowErr != nil:
			e.rowErrors++
			sev := Error
			if ep.OnError != mapping.PolicyFail {
				sev = Warning
			}
			a.finding(sev, "data.row_error", path, ep.Name, "%s", ro.rowErr.Error())
		case len(ro.viol) > 0:
			e.overLimit++
			key := mapping.KeyStringOf(ep.SourceKey(ro.srcKey))
			for _, v := range ro.viol {
				a.finding(Error, v.check, path, ep.Name, "row %s: %s", key, v.msg)
			}
		default:
			for j := range ro.items {
				a.item(ro, ep, e, &ro.items[j])
			}
		}
	}
}

func (a *aggregator) item(ro *rowObs, ep *mapping.EntityPlan, e *entAcc, it *itemObs) {
	size := int64(it.size)
	units := int64(mapping.WriteUnits(it.size))
	pkLen, skLen := it.pkLen, 0
	if a.p.Table.SK != nil {
		skLen = len(it.key) - it.pkLen - 1
	}
	e.items++
	e.bytes += size
	e.units += units
	e.sizes.add(size)
	e.maxPK, e.maxSK = max(e.maxPK, pkLen), max(e.maxSK, skLen)
	if it.splitParts > 0 {
		e.splitItems++
		e.splitParts += int64(it.splitParts)
		e.maxParts = max(e.maxParts, it.splitParts)
	}
	if it.splitPart > 0 {
		e.maxPartBytes = max(e.maxPartBytes, it.size)
	}
	t := &a.tbl
	t.items++
	t.bytes += size
	t.units += units
	t.sizes.add(size)
	t.maxPK, t.maxSK = max(t.maxPK, pkLen), max(t.maxSK, skLen)

	collection := size
	for j, io := range it.idx {
		if io.half {
			ia := a.idx[j]
			ia.half[ep.Name]++
			k := mapping.KeyStringOf(ep.SourceKey(ro.srcKey))
			if ex, ok := ia.halfExample[ep.Name]; !ok || k < ex {
				ia.halfExample[ep.Name] = k
			}
		}
		if io.sparseOut {
			ia := a.idx[j]
			ia.sparse[ep.Name]++
			k := mapping.KeyStringOf(ep.SourceKey(ro.srcKey))
			if ex, ok := ia.sparseExample[ep.Name]; !ok || k < ex {
				ia.sparseExample[ep.Name] = k
			}
		}
		if !io.in {
			continue
		}
		iu := int64(mapping.WriteUnits(io.size))
		e.idxItems[j]++
		e.idxUnits[j] += iu
		ia := a.idx[j]
		ia.items++
		ia.bytes += int64(io.size)
		ia.units += iu
		ia.maxPK = max(ia.maxPK, len(io.pk))
		if ia.pk != nil {
			ia.pk.add(io.pk, [nWeights]int64{1, int64(io.size), iu})
		} else {
			collection += int64(io.size)
		}
	}
	// Counted by the text reports show (binary in base64), as the
	// indexes' partition keys are: KeyStat.Key is for people.
	t.pk.add(mapping.KeyText(a.p.Table.PartitionKeyAttr(it.key[:it.pkLen])), [nWeights]int64{1, collection, units})

	if a.dup.add(it.key) {
		a.finding(Error, "data.duplicate_key", "entities."+ep.Name, ep.Name,
			"item key %s is produced again by %s row %s: one item would silently overwrite the other",
			a.p.Table.KeyTextOf(it.key, it.pkLen), ep.Name, mapping.KeyStringOf(ep.SourceKey(ro.srcKey)))
	}
	if a.large.wants(size) {
		a.large.push(LargeItem{Entity: ep.Name, SourceKey: mapping.KeyStringOf(ep.SourceKey(ro.srcKey)), Key: a.p.Table.KeyTextOf(it.key, it.pkLen), Bytes: size})
	}
}

// LargeItem is one of the largest items, with the row it comes from.
type LargeItem struct {
	Entity    string `json:"entity"`
	SourceKey string `json:"source_key"`
	Key       string `json:"key"`
	Bytes     int64  `json:"bytes"`
}

// smaller orders items by size, ties broken by source key, so that which
// items are kept does not depend on the order rows arrive in.
func smaller(a, b LargeItem) bool {
	if a.Bytes != b.Bytes {
		return a.Bytes < b.Bytes
	}
	if a.Entity != b.Entity {
		return a.Entity > b.Entity
	}
	return a.SourceKey > b.SourceKey
}

// largestItems keeps the n largest items in a min-heap.
type largestItems struct {
	n     int
	items []LargeItem
}

func (l *largestItems) Len() int           { return len(l.items) }
func (l *largestItems) Less(i, j int) bool { return smaller(l.items[i], l.items[j]) }
func (l *largestItems) Swap(i, j int)      { l.items[i], l.items[j] = l.items[j], l.items[i] }
func (l *largestItems) Push(x any)         { l.items = append(l.items, x.(LargeItem)) }
func (l *largestItems) Pop() any {
	x := l.items[len(l.items)-1]
	l.items = l.items[:len(l.items)-1]
	return x
}

func (l *largestItems) wants(size int64) bool {
	return len(l.items) < l.n || size >= l.items[0].Bytes
}

func (l *largestItems) push(it LargeItem) {
	if len(l.items) >= l.n && !smaller(l.items[0], it) {
		return
	}
	heap.Push(l, it)
	if len(l.items) > l.n {
		heap.Pop(l)
	}
}
