package syncfuzz

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/dynafold/dynafold/mapping"
)

// Design is a mapping and the source data it is fuzzed over.
type Design struct {
	Name string
	// Config is the mapping, relative to the repository root.
	Config string
	// Data is the SQL that creates and fills the source, per engine;
	// %s is the engine (postgres or mysql).
	Data string
	// Vars are --var settings the mapping needs.
	Vars []string
}

// Designs are the designs the fuzzer knows, in the order the full tier
// runs them.
var Designs = []Design{
	{Name: "portfolios", Config: "testdata/sync/portfolios.yaml", Data: "testdata/portfolios/%s.sql"},
	{Name: "telemetryhub", Config: "configs/telemetryhub.yaml", Data: "testdata/telemetryhub/%s.sql"},
	{Name: "alleycat", Config: "testdata/sync/alleycat.yaml", Data: "testdata/alleycat/%s.sql"},
	{Name: "photos", Config: "configs/photos.yaml", Data: "testdata/photos/%s.sql", Vars: []string{"tenant=7"}},
	{Name: "products", Config: "configs/products.yaml", Data: "testdata/products/%s.sql"},
	{Name: "chinook", Config: "configs/chinook.yaml", Data: "testdata/chinook/%s.sql"},
	{Name: "documents", Config: "testdata/sync/documents.yaml", Data: "testdata/documents/%s.sql"},
}

// DesignNamed returns the design called name.
func DesignNamed(name string) (Design, error) {
	var names []string
	for _, d := range Designs {
		if d.Name == name {
			return d, nil
		}
		names = append(names, d.Name)
	}
	return Design{}, fmt.Errorf("no design %q (known: %s)", name, strings.Join(names, ", "))
}

// roles is what the mapping makes of each column, for the values the
// fuzzer writes: a column in an item's key gets fresh values (two rows
// with one key would be the mapping's error, not sync's), an index key
// column may also be NULL (a sparse index), a column read as a number
// gets digits, and a when: condition's values are tried often.
type roles struct {
	tables map[string]bool            // tables the mapping reads
	key    map[string]map[string]bool // table → columns in an item's key
	index  map[string]map[string]bool // table → columns in an index key
	number map[string]map[string]bool // table → columns read as numbers
	// joinKey: table → columns of the joins an item key is read through,
	// which must not be NULL (the key would be).
	joinKey map[string]map[string]bool
	palette map[string]map[string][]string
}

var templateRef = regexp.MustCompile(`\$\{([^}|]+)`)

func mark(m map[string]map[string]bool, table, col string) {
	if m[table] == nil {
		m[table] = map[string]bool{}
	}
	m[table][col] = true
}

func readRoles(repo string, d Design) (*roles, error) {
	cfg, err := mapping.Load(filepath.Join(repo, d.Config))
	if err != nil {
		return nil, err
	}
	r := &roles{tables: map[string]bool{}, key: map[string]map[string]bool{}, index: map[string]map[string]bool{},
		number: map[string]map[string]bool{}, joinKey: map[string]map[string]bool{}, palette: map[string]map[string][]string{}}
	bare := func(from string) string {
		if i := strings.LastIndexByte(from, '.'); i >= 0 {
			return from[i+1:]
		}
		return from
	}
	// Key attributes of an index declared numeric must read as numbers too.
	numericAttr := map[string]bool{}
	for _, a := range cfg.Target.AttributeTypes {
		numericAttr[a.Key] = a.Value == "N"
	}
	for _, e := range cfg.Entities {
		ent := e.Value
		if ent == nil || ent.From == "" {
			continue
		}
		base := bare(ent.From)
		r.tables[base] = true
		alias := map[string]string{}
		for _, j := range ent.Join {
			if j.Value != nil {
				alias[j.Key] = bare(j.Value.From)
				r.tables[alias[j.Key]] = true
			}
		}
		resolve := func(ref string) (string, string) {
			c := mapping.ParseColumnName(strings.TrimSpace(ref))
			if c.Alias == "" {
				return base, c.Name
			}
			return alias[c.Alias], c.Name
		}
		joins := map[string]*mapping.JoinSpec{}
		for _, j := range ent.Join {
			joins[j.Key] = j.Value
		}
		// chain marks the columns that pair alias's join with the rows
		// before it, and theirs: a key read through a join is NULL when
		// one of them is.
		var chain func(m map[string]map[string]bool, alias string, depth int)
		chain = func(m map[string]map[string]bool, alias string, depth int) {
			j := joins[alias]
			if j == nil || depth > 8 {
				return
			}
			for _, on := range j.On {
				t, c := resolve(on.Value)
				mark(m, t, c)
				if ref := mapping.ParseColumnName(on.Value); ref.Alias != "" {
					chain(m, ref.Alias, depth+1)
				}
			}
		}
		refs := func(m map[string]map[string]bool, tmpl string) {
			for _, m2 := range templateRef.FindAllStringSubmatch(tmpl, -1) {
				if strings.HasPrefix(m2[1], "var.") {
					continue
				}
				t, c := resolve(m2[1])
				mark(m, t, c)
				if ref := mapping.ParseColumnName(m2[1]); ref.Alias != "" && m != nil {
					chain(r.joinKey, ref.Alias, 0)
				}
			}
		}
		refs(r.key, ent.Key.PK)
		refs(r.key, ent.Key.SK)
		for _, ix := range ent.Index {
			if ix.Value == nil {
				continue
			}
			refs(r.index, ix.Value.PK)
			refs(r.index, ix.Value.SK)
			if w := ix.Value.When; w != nil {
				t, c := resolve(w.Column)
				vals := append([]string(nil), w.In...)
				if w.Equals != nil {
					vals = append(vals, *w.Equals)
				}
				r.addPalette(t, c, vals...)
			}
		}
		for _, it := range ent.Items {
			if it.Value == nil {
				continue
			}
			refs(r.key, it.Value.Key.PK)
			refs(r.key, it.Value.Key.SK)
			for _, ix := range it.Value.Index {
				if ix.Value != nil {
					refs(r.index, ix.Value.PK)
					refs(r.index, ix.Value.SK)
				}
			}
		}
		numbers := func(attrs mapping.OrderedMap[*mapping.AttributeSpec], table string) {
			for _, a := range attrs {
				if a.Value != nil && (a.Value.Type == "N" || numericAttr[a.Key]) && a.Value.From != "" {
					t, c := resolve(a.Value.From)
					if table != "" {
						t = table
					}
					mark(r.number, t, c)
				}
			}
		}
		numbers(ent.Attributes, "")
		for _, n := range ent.Nest {
			if n.Value == nil {
				continue
			}
			child := bare(n.Value.From)
			r.tables[child] = true
			numbers(n.Value.Attributes, child)
			for _, k := range templateRef.FindAllStringSubmatch(n.Value.Key, -1) {
				mark(r.key, child, k[1])
			}
		}
	}
	return r, nil
}

func (r *roles) addPalette(table, col string, vals ...string) {
	if r.palette[table] == nil {
		r.palette[table] = map[string][]string{}
	}
	r.palette[table][col] = append(r.palette[table][col], vals...)
}

func (r *roles) isKey(table, col string) bool     { return r.key[table][col] }
func (r *roles) isIndex(table, col string) bool   { return r.index[table][col] }
func (r *roles) isJoinKey(table, col string) bool { return r.joinKey[table][col] }
func (r *roles) isNumber(table, col string) bool  { return r.number[table][col] }

// mappedTables lists the tables the mapping reads, sorted.
func (r *roles) mappedTables() []string {
	var out []string
	for t := range r.tables {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
