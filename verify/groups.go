package verify

import (
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
)

// Stale items are also reported by collection (Report.StaleByCollection):
// when a customer is deleted at the source with its orders and their
// lines, what is left in the table is one collection of stale items, and
// the report says so in one entry with its counts per entity rather than
// one line per item. Every sweep walks a collection from one goroutine and
// in sort-key order (a Query's order, or the table sweep's merge), so a
// collection's group is built whole there and handed to the tally once.

// collectionExamples is how many stale keys a StaleCollection lists: enough
// to see what kind of items they are; the counts say the rest.
const collectionExamples = 5

// staleGroup gathers the stale items of the collection a sweep is walking.
// Its owner resets it with end at each collection's end.
type staleGroup struct {
	pk       string
	items    int64
	perEnt   []int64
	examples []StaleKey
}

// add counts a stale item of entity ent, keeping its key while the
// collection's examples are not complete.
func (g *staleGroup) add(c *comparer, ent int, item map[string]types.AttributeValue) {
	if g.items == 0 {
		g.pk = mapping.KeyText(item[c.keys.pk.Name])
		if g.perEnt == nil {
			g.perEnt = make([]int64, len(c.in.Plan.Entities))
		}
	}
	g.items++
	g.perEnt[ent]++
	if len(g.examples) < collectionExamples {
		sk := StaleKey{Entity: c.in.Plan.Entities[ent].Name}
		if c.keys.sk != nil {
			v := mapping.KeyText(item[c.keys.sk.Name])
			sk.SK = &v
		}
		g.examples = append(g.examples, sk)
	}
}

// end hands the collection's group to the tally, if it holds stale items,
// and resets g for the next collection.
func (g *staleGroup) end(c *comparer) {
	if g.items == 0 {
		return
	}
	c.tally.staleCollection(g, c.in.Plan)
	g.pk, g.items, g.examples = "", 0, nil
	clear(g.perEnt)
}

// groupSet keeps the limit stale collections with the smallest partition
// keys (as text), like exampleSet: the same data gives the same report
// whatever the scheduling. It holds at most twice the limit between trims.
type groupSet struct {
	limit int
	items []StaleCollection
	max   string
	full  bool
}

func (s *groupSet) wants(pk string) bool {
	return s.limit > 0 && (!s.full || pk < s.max)
}

func (s *groupSet) add(sc StaleCollection) {
	if !s.wants(sc.PK) {
		return
	}
	s.items = append(s.items, sc)
	if len(s.items) >= 2*s.limit {
		s.trim()
	}
}

func (s *groupSet) trim() {
	slices.SortFunc(s.items, func(a, b StaleCollection) int { return strings.Compare(a.PK, b.PK) })
	if s.limit > 0 && len(s.items) >= s.limit {
		s.items = s.items[:s.limit]
		s.full = true
		s.max = s.items[len(s.items)-1].PK
	}
}

func (s *groupSet) list() []StaleCollection {
	s.trim()
	return append([]StaleCollection{}, s.items...)
}

// groupTally is the tally's part for stale collections.
type groupTally struct {
	mu    sync.Mutex
	count int64
	set   groupSet
}

// staleCollection counts a collection holding stale items and keeps it
// when it is among the first by partition key.
func (t *tally) staleCollection(g *staleGroup, p *mapping.Plan) {
	t.groups.mu.Lock()
	defer t.groups.mu.Unlock()
	t.groups.count++
	if !t.groups.set.wants(g.pk) {
		return
	}
	sc := StaleCollection{PK: g.pk, Items: g.items, Entities: []EntityStale{}, Examples: g.examples}
	for i, n := range g.perEnt {
		if n > 0 {
			sc.Entities = append(sc.Entities, EntityStale{Entity: p.Entities[i].Name, Items: n})
		}
	}
	t.groups.set.add(sc)
}

// fillGroups puts the stale collections into r.
func (t *tally) fillGroups(r *Report) {
	t.groups.mu.Lock()
	defer t.groups.mu.Unlock()
	r.StaleCollections = t.groups.count
	r.StaleByCollection = t.groups.set.list()
}
