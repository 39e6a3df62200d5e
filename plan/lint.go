package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// itemRef is one item plan with what the checks need to know about it.
type itemRef struct {
	ent    *mapping.EntityPlan
	it     *mapping.ItemPlan
	label  string // "server" or "user.profile"
	path   string // entities.server or entities.user.items.profile
	pkPath string
	skPath string
	kinds  []value.Kind
	attrs  []mapping.AttrInfo
}

func (r *itemRef) has(tbl *mapping.TableSchema, name string) bool {
	if name == tbl.PK.Name || (tbl.SK != nil && name == tbl.SK.Name) {
		return true
	}
	for _, a := range r.attrs {
		if a.Name == name {
			return true
		}
	}
	return false
}

type linter struct {
	p      *mapping.Plan
	tbl    *mapping.TableSchema
	schema *mapping.Schema
	target *TargetInfo
	items  []*itemRef
	fs     findings
}

// Lint runs the static checks over a compiled plan. schema, when given, is
// the source schema the plan was compiled against (its unique keys count
// as identifying a row); target, when given, is what the caller learned
// about the existing table.
func Lint(p *mapping.Plan, schema *mapping.Schema, target *TargetInfo) []Finding {
	l := &linter{p: p, tbl: p.Table, schema: schema, target: target}
	for _, ep := range p.Entities {
		kinds := make([]value.Kind, len(ep.Query.Columns))
		for i, c := range ep.Query.Columns {
			kinds[i] = c.Kind
		}
		for _, it := range ep.Items {
			r := &itemRef{ent: ep, it: it, label: ep.Name, path: "entities." + ep.Name, kinds: kinds, attrs: it.Attributes()}
			r.pkPath, r.skPath = r.path+".key.pk", r.path+".key.sk"
			if it.Name != "" {
				r.label += "." + it.Name
				r.path += ".items." + it.Name
				r.skPath = r.path + ".key.sk"
				r.pkPath = r.path + ".key.pk"
				if spec, ok := p.Config.Entities.Get(ep.Name); ok && spec != nil {
					if is, ok := spec.Items.Get(it.Name); ok && is != nil && is.Key.PK == "" {
						r.pkPath = "entities." + ep.Name + ".key.pk"
					}
				}
			}
			l.items = append(l.items, r)
		}
	}
	for _, r := range l.items {
		l.keyUniqueness(r)
		l.keyTypes(r)
	}
	l.spatial()
	l.collisions()
	l.delimiters()
	l.indexes()
	l.names()
	for _, w := range p.Warnings {
		l.fs.add(Warning, Mapping, "pattern", w.Path, "", "%s", w.Msg)
	}
	l.patterns()
	l.targetState()
	out := []Finding(l.fs)
	Acknowledge(out, p.Config.Lint)
	sortFindings(out)
	return out
}

// keyUse is how a template uses a column.
type keyUse int

const (
	useNone   keyUse = iota
	useLost          // only through shard:N or date, which map many values to one
	useFolded        // through lower or upper: values differing in case collide
	useExact
)

func exprUse(e *mapping.Expr) keyUse {
	u := useExact
	for _, t := range e.Transforms {
		switch t.Name {
		case "shard", "date":
			return useLost
		case "lower", "upper":
			u = useFolded
		}
	}
	return u
}

// keyUniqueness checks that the item's key templates use every column of
// the source primary key (or of another unique key), so that distinct rows
// give distinct keys.
func (l *linter) keyUniqueness(r *itemRef) {
	uses := map[string]keyUse{}
	for _, t := range []*mapping.Template{r.it.PK, r.it.SK} {
		if t == nil {
			continue
		}
		for _, e := range t.Exprs() {
			if e.Ref.Alias != "" {
				continue
			}
			uses[e.Ref.Name] = max(uses[e.Ref.Name], exprUse(e))
		}
	}
	var used, missing, folded []string
	for _, c := range r.ent.KeyColumns {
		switch uses[c] {
		case useExact:
			used = append(used, c)
		case useFolded:
			used = append(used, c)
			folded = append(folded, c)
		default:
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		var identified []string
		for c, u := range uses {
			if u >= useFolded {
				identified = append(identified, c)
			}
		}
		if t := l.baseTable(r.ent); t != nil && len(identified) > 0 && t.IsUnique(identified) {
			return
		}
		what := "table " + r.ent.Query.Base.String()
		if r.ent.Query.SQL != "" {
			what = "the query"
		}
		l.fs.add(Error, Mapping, "key.incomplete", r.path+".key", r.ent.Name,
			"the key (%s) does not use %s of the primary key (%s) of %s: rows that differ only in %s get the same key and overwrite each other",
			keyTemplates(r.it), columnList(missing), strings.Join(r.ent.KeyColumns, ", "), what, strings.Join(missing, ", "))
		return
	}
	for _, c := range folded {
		if i := slices.Index(r.ent.ColumnNames(), c); i >= 0 && kindChars(r.kinds[i], "") != anyBytes {
			continue // numbers and dates have no letter case to fold
		}
		l.fs.add(Note, Mapping, "key.case_fold", r.path+".key", r.ent.Name,
			"the key uses primary-key column %s only through lower/upper: values that differ only in letter case would get the same key (the measured duplicate check counts any that exist)", c)
	}
}

func (l *linter) baseTable(ep *mapping.EntityPlan) *source.Table {
	if l.schema == nil || ep.Query.SQL != "" {
		return nil
	}
	if t := l.schema.Tables[ep.Query.Base]; t != nil {
		return t
	}
	for _, t := range l.schema.Tables {
		if t != nil && t.Ref == ep.Query.Base {
			return t
		}
	}
	return nil
}

func keyTemplates(it *mapping.ItemPlan) string {
	s := fmt.Sprintf("pk %q", it.PK.String())
	if it.SK != nil {
		s += fmt.Sprintf(", sk %q", it.SK.String())
	}
	return s
}

func columnList(cols []string) string {
	if len(cols) == 1 {
		return "column " + cols[0]
	}
	return "columns " + strings.Join(cols, ", ")
}

// keyTypes checks that Number keys are not built from text.
func (l *linter) keyTypes(r *itemRef) {
	check := func(path, attr string, typ mapping.AttrType, t *mapping.Template) {
		if t == nil || typ != mapping.TypeN {
			return
		}
		for _, p := range t.Parts() {
			if p.Expr == nil && !numSet.hasAll(p.Lit) {
				l.fs.add(Error, Mapping, "key.type", path, r.ent.Name,
					"%s is a Number key but the template %q has the text %q: no row can produce a number, so every row would be rejected", attr, t.String(), p.Lit)
				return
			}
		}
	}
	check(r.pkPath, l.tbl.PK.Name, l.tbl.PK.Type, r.it.PK)
	if l.tbl.SK != nil {
		check(r.skPath, l.tbl.SK.Name, l.tbl.SK.Type, r.it.SK)
	}
	for _, a := range r.attrs {
		if a.KeyType != "" {
			check(a.Path, a.Name, a.KeyType, a.Template)
		}
	}
}

// collisions finds pairs of items (of two entities, or two items: of one
// entity) whose keys can be equal: nothing constant in their templates
// tells them apart. It is an error when ordinary alphanumeric values can
// make them equal, a warning when only a value containing punctuation can.
func (l *linter) collisions() {
	type keyPat struct{ pk, sk pattern }
	pats := make([]keyPat, len(l.items))
	for i, r := range l.items {
		pats[i].pk = compilePattern(r.it.PK, r.kinds, l.tbl.PK.Type)
		if r.it.SK != nil {
			pats[i].sk = compilePattern(r.it.SK, r.kinds, l.tbl.SK.Type)
		}
	}
	both := func(a, b keyPat, to *charset) bool {
		pa, pb, sa, sb := a.pk, b.pk, a.sk, b.sk
		if to != nil {
			pa, pb, sa, sb = pa.restrict(*to), pb.restrict(*to), sa.restrict(*to), sb.restrict(*to)
		}
		return intersects(pa, pb) && (l.tbl.SK == nil || intersects(sa, sb))
	}
	for i := range l.items {
		for j := i + 1; j < len(l.items); j++ {
			a, b := l.items[i], l.items[j]
			likely := both(pats[i], pats[j], &alnum)
			if !likely && !both(pats[i], pats[j], nil) {
				continue
			}
			what := fmt.Sprintf("entities %s and %s", a.label, b.label)
			if a.ent == b.ent {
				what = fmt.Sprintf("items %s and %s", a.label, b.label)
			}
			keys := fmt.Sprintf("pk %q / %q", a.it.PK.String(), b.it.PK.String())
			if l.tbl.SK != nil {
				keys += fmt.Sprintf(", sk %q / %q", a.it.SK.String(), b.it.SK.String())
			}
			if likely {
				l.fs.add(Error, Mapping, "key.collision", b.path+".key", b.ent.Name,
					"%s can produce the same PK+SK: no constant text in their keys (%s) tells them apart, so one item would overwrite the other; give each a distinct constant prefix in the sort key, e.g. \"%s#${…}\"",
					what, keys, strings.ToUpper(b.ent.Name))
			} else {
				l.fs.add(Warning, Mapping, "key.collision", b.path+".key", b.ent.Name,
					"%s can produce the same PK+SK (%s) when a value contains the other's delimiter text",
					what, keys)
			}
		}
	}
}

// delimiters finds key templates whose pieces cannot be told apart: two
// values separated by text both can contain, or by nothing at all.
func (l *linter) delimiters() {
	seen := map[string]bool{}
	check := func(r *itemRef, path string, keyType mapping.AttrType, t *mapping.Template) {
		if t == nil || seen[path+"\x00"+t.String()] {
			return
		}
		seen[path+"\x00"+t.String()] = true
		parts := t.Parts()
		for i := 0; i < len(parts); i++ {
			if parts[i].Expr == nil {
				continue
			}
			e1 := parts[i].Expr
			sep, j := "", i+1
			if j < len(parts) && parts[j].Expr == nil {
				sep, j = parts[j].Lit, j+1
			}
			if j >= len(parts) || parts[j].Expr == nil {
				continue
			}
			e2 := parts[j].Expr
			c1 := exprChars(e1, kindAt(r.kinds, e1.Position()), keyType)
			c2 := exprChars(e2, kindAt(r.kinds, e2.Position()), keyType)
			switch {
			case sep == "" && !fixedWidth(e1):
				l.fs.add(Warning, Mapping, "key.delimiter", path, r.ent.Name,
					"template %q puts ${%s} and ${%s} side by side with nothing between them: (\"12\", \"3\") and (\"1\", \"23\") give the same key; separate them with a character neither can contain, e.g. \"#\"",
					t.String(), e1.Ref, e2.Ref)
			case sep != "" && c1.hasAll(sep) && c2.hasAll(sep):
				l.fs.add(Warning, Mapping, "key.delimiter", path, r.ent.Name,
					"template %q separates ${%s} and ${%s} with %q, which both values can contain: (\"a%sb\", \"c\") and (\"a\", \"b%sc\") give the same key",
					t.String(), e1.Ref, e2.Ref, sep, sep, sep)
			}
		}
	}
	for _, r := range l.items {
		check(r, r.pkPath, l.tbl.PK.Type, r.it.PK)
		if l.tbl.SK != nil {
			check(r, r.skPath, l.tbl.SK.Type, r.it.SK)
		}
		for _, a := range r.attrs {
			if a.KeyType != "" {
				check(r, a.Path, a.KeyType, a.Template)
			}
		}
	}
}

// fixedWidth reports whether an expression's text always has the same
// length, so that what follows it starts at a known offset.
func fixedWidth(e *mapping.Expr) bool {
	for _, t := range e.Transforms {
		switch t.Name {
		case "pad", "iso", "date":
			return true
		}
	}
	return false
}

// spatial says what each spatial column becomes: WKT text, and GeoJSON for
// the attributes that ask for type: M.
func (l *linter) spatial() {
	for _, ep := range l.p.Entities {
		geojson := map[string]bool{}
		for _, c := range ep.Query.Columns {
			if c.Cast == source.CastGeoJSON {
				geojson[c.Alias+"."+c.Name] = true
			}
		}
		for _, c := range ep.Query.Columns {
			if c.Cast != source.CastWKT {
				continue
			}
			name := c.Name
			if c.Alias != "" && c.Alias != source.BaseAlias {
				name = c.Alias + "." + c.Name
			}
			also := ""
			if geojson[c.Alias+"."+c.Name] {
				also = ", and as GeoJSON (ST_AsGeoJSON) for its type: M attributes"
			}
			l.fs.add(Note, Mapping, "type.spatial", "entities."+ep.Name, ep.Name,
				"spatial column %s is written as WKT text (ST_AsText), e.g. POINT(-112.8 49.7)%s; its stored bytes (SRID and WKB) are never written", name, also)
		}
	}
}
