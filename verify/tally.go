package verify

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/dynafold/dynafold/mapping"
)

// tally counts findings per entity and keeps the examples. It is safe for
// concurrent use by readers, lookups and sweep workers. Examples are the
// first by key rather than the first found, so that the same data gives the
// same report whatever the scheduling.
type tally struct {
	ents  []*entityTally
	dupes atomic.Int64

	mu        sync.Mutex
	limit     int
	create    exampleSet
	update    exampleSet
	stale     exampleSet
	rowErrors []RowError

	groups groupTally
}

type entityTally struct {
	name                                  string
	rows, sampled, rowErrors              atomic.Int64
	create, update, unchanged, staleCount atomic.Int64
}

func newTally(p *mapping.Plan, limit int) *tally {
	t := &tally{limit: limit}
	for _, ep := range p.Entities {
		t.ents = append(t.ents, &entityTally{name: ep.Name})
	}
	t.create.limit, t.update.limit, t.stale.limit = limit, limit, limit
	t.groups.set.limit = limit
	return t
}

// exampleSet keeps the limit smallest findings by key. It holds at most
// twice the limit between trims.
type exampleSet struct {
	limit int
	items []Finding
	// max is the largest key kept after the last trim, once full: a key
	// above it can never be an example.
	max  *Key
	full bool
}

func findingLess(a, b Finding) int {
	switch {
	case a.Key.less(b.Key):
		return -1
	case b.Key.less(a.Key):
		return 1
	case a.Entity < b.Entity:
		return -1
	case a.Entity > b.Entity:
		return 1
	}
	return 0
}

// wants reports whether a finding with this key could be kept, so that
// callers build its changes only then.
func (s *exampleSet) wants(k Key) bool {
	return s.limit > 0 && (!s.full || k.less(*s.max))
}

func (s *exampleSet) add(f Finding) {
	if !s.wants(f.Key) {
		return
	}
	s.items = append(s.items, f)
	if len(s.items) >= 2*s.limit {
		s.trim()
	}
}

func (s *exampleSet) trim() {
	slices.SortFunc(s.items, findingLess)
	// With no examples wanted (--examples 0) nothing was kept.
	if s.limit > 0 && len(s.items) >= s.limit {
		s.items = s.items[:s.limit]
		s.full = true
		k := s.items[len(s.items)-1].Key
		s.max = &k
	}
}

func (s *exampleSet) list() []Finding {
	s.trim()
	out := make([]Finding, len(s.items))
	copy(out, s.items)
	return out
}

func (t *tally) set(class string) *exampleSet {
	switch class {
	case ClassCreate:
		return &t.create
	case ClassUpdate:
		return &t.update
	}
	return &t.stale
}

// wants reports whether a finding of class with key k may become an
// example.
func (t *tally) wants(class string, k Key) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.set(class).wants(k)
}

// found counts a finding of entity ent; f is its example, or nil when the
// caller knows it is not wanted.
func (t *tally) found(class string, ent int, f *Finding) {
	e := t.ents[ent]
	switch class {
	case ClassCreate:
		e.create.Add(1)
	case ClassUpdate:
		e.update.Add(1)
	case ClassUnchanged:
		e.unchanged.Add(1)
		return
	case ClassStale:
		e.staleCount.Add(1)
	}
	if f == nil {
		return
	}
	t.mu.Lock()
	t.set(class).add(*f)
	t.mu.Unlock()
}

// rowError counts a row that cannot become an item, keeping the first by
// entity and key.
func (t *tally) rowError(ent int, re RowError) {
	t.ents[ent].rowErrors.Add(1)
	if t.limit == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rowErrors = append(t.rowErrors, re)
	if len(t.rowErrors) >= 2*t.limit {
		t.trimRowErrors()
	}
}

func (t *tally) trimRowErrors() {
	sort.Slice(t.rowErrors, func(i, j int) bool {
		a, b := t.rowErrors[i], t.rowErrors[j]
		if a.Entity != b.Entity {
			return a.Entity < b.Entity
		}
		return a.SourceKey < b.SourceKey
	})
	if len(t.rowErrors) > t.limit {
		t.rowErrors = t.rowErrors[:t.limit]
	}
}

func (t *tally) rowErrorCount() int64 {
	var n int64
	for _, e := range t.ents {
		n += e.rowErrors.Load()
	}
	return n
}

// fill puts the counts and examples into r.
func (t *tally) fill(r *Report) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r.Entities = make([]EntityCounts, 0, len(t.ents))
	for _, e := range t.ents {
		c := Counts{
			RowsSeen: e.rows.Load(), RowsSampled: e.sampled.Load(), RowErrors: e.rowErrors.Load(),
			Create: e.create.Load(), Update: e.update.Load(), Unchanged: e.unchanged.Load(), Stale: e.staleCount.Load(),
		}
		c.Items = c.Create + c.Update + c.Unchanged
		r.Entities = append(r.Entities, EntityCounts{Entity: e.name, Counts: c})
		r.Totals.add(c)
	}
	r.DuplicateKeys = t.dupes.Load()
	r.Examples = Examples{Create: t.create.list(), Update: t.update.list(), Stale: t.stale.list()}
	t.trimRowErrors()
	r.RowErrors = append([]RowError{}, t.rowErrors...)
	t.fillGroups(r)
}
