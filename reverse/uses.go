package reverse

import (
	"fmt"
	"strings"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// use is one place an item holds a column's value: a plain attribute, a
// part of a key or of a template, the TTL attribute, a map key.
type use struct {
	pos    int // row position
	holder string
	path   string
	// lossy says what the holder loses of the value ("" when nothing).
	lossy   string
	caveats []string
	// cond says why the holder can be missing while the column has a
	// value ("" when it cannot).
	cond string
	// rank orders the owners fail-back prefers: plain attributes first.
	rank int
	src  Source
}

// rowContext collects the uses of one row's columns: an entity's row, or
// a nested child's.
type rowContext struct {
	a     *analyzer
	cols  []source.ColumnRef
	base  *source.Table
	joins []source.Join
	// equal maps a joined "alias.column" to the base column it equals.
	equal map[string]string
	// child is the alias of the row's own columns when they are not "".
	child string
	uses  []use
	// derived are copies found while collecting.
	derived []Derived
}

// own is the base column a row position holds, following join equality;
// ok is false for a pre-joined ancestor's column.
func (rc *rowContext) own(pos int) (string, bool) {
	ref := rc.cols[pos]
	if ref.Alias == rc.child {
		return ref.Name, true
	}
	name, ok := rc.equal[ref.Alias+"."+ref.Name]
	return name, ok
}

// column is the source column of a row position, nil when unknown.
func (rc *rowContext) column(pos int) *source.Column {
	ref := rc.cols[pos]
	if ref.Alias == rc.child {
		if rc.base == nil {
			return nil
		}
		return rc.base.Column(ref.Name)
	}
	for _, j := range rc.joins {
		if j.Alias == ref.Alias {
			if t := rc.a.table(j.Table); t != nil {
				return t.Column(ref.Name)
			}
		}
	}
	return nil
}

// nullable: the position can be NULL in a row (an ancestor's column
// always can: its row may be missing).
func (rc *rowContext) nullable(pos int) bool {
	if rc.cols[pos].Alias != rc.child {
		return true
	}
	c := rc.column(pos)
	return c == nil || c.Nullable
}

// item collects the uses of one item of an entity.
func (rc *rowContext) item(e *Entity, it *mapping.ItemPlan) {
	tbl := rc.a.p.Table
	path := e.Path
	label := ""
	if it.Name != "" {
		path += ".items." + it.Name
		label = " of item " + it.Name
	}
	rc.template(it.PK, Source{Item: it.Name, Attribute: tbl.PK.Name, Type: tbl.PK.Type}, fmt.Sprintf("key %s %q%s", tbl.PK.Name, it.PK, label), keyPath(e.Path, path, "pk", it), "", false)
	if it.SK != nil {
		rc.template(it.SK, Source{Item: it.Name, Attribute: tbl.SK.Name, Type: tbl.SK.Type}, fmt.Sprintf("key %s %q%s", tbl.SK.Name, it.SK, label), path+".key.sk", "", false)
	}
	attrs := it.Attributes()
	for _, at := range attrs {
		rc.attribute(at, attrs, it.Name, label)
	}
	if pos, offset, ok := it.TTLSource(); ok {
		u := use{pos: pos, holder: "TTL attribute " + tbl.TTLAttribute + label, path: e.Path + ".ttl", rank: 2,
			src: Source{Item: it.Name, Attribute: tbl.TTLAttribute, Type: mapping.TypeN, TTLOffset: offset}}
		if k := rc.cols[pos].Kind; k == value.Timestamp {
			if p := fraction(rc.column(pos), rc.a.driver); p > 0 {
				u.caveats = []string{secondsCaveat(p)}
			}
		}
		if offset != 0 {
			u.caveats = append(u.caveats, fmt.Sprintf("the TTL is the column plus %ds, subtracted on the way back", offset))
		}
		rc.uses = append(rc.uses, u)
	}
}

// keyPath is the mapping path of an item's key.pk: its own, or the
// entity's it inherits.
func keyPath(entityPath, itemPath, part string, it *mapping.ItemPlan) string {
	if it.Name == "" {
		return itemPath + ".key." + part
	}
	return entityPath + ".key." + part + " (or " + itemPath + ".key." + part + ")"
}

// attribute collects the uses of one attribute.
func (rc *rowContext) attribute(at mapping.AttrInfo, all []mapping.AttrInfo, item, label string) {
	holder := "attribute " + at.Name + label
	if at.Constant {
		rc.derived = append(rc.derived, Derived{Holder: holder, Why: "a constant (value:)"})
		return
	}
	cond := ""
	if at.Conditional {
		cond = "its index's when: leaves it out of some items"
	}
	if cond == "" {
		cond = rc.halfKey(at, all)
	}
	src := Source{Item: item, Attribute: at.Name, Type: at.Type}
	if at.Column >= 0 && (at.Template == nil || plain(at.Template)) {
		lossy, cav := stored(rc.cols[at.Column], rc.column(at.Column), at.Type, rc.a.driver)
		rc.uses = append(rc.uses, use{pos: at.Column, holder: holder, path: at.Path, lossy: lossy, caveats: cav, cond: cond, src: src})
		return
	}
	rc.template(at.Template, src, fmt.Sprintf("attribute %s %q%s", at.Name, at.Template, label), at.Path, cond, true)
}

// plain: the template is one ${column} with no transform and no text.
func plain(t *mapping.Template) bool {
	e, ok := t.Single()
	return ok && len(e.Transforms) == 0
}

// halfKey says why an index key attribute can be left off an item whose
// column has a value: index: wrote it, the index has two key attributes
// and the item can lack the other one (half_key: drop, the default).
func (rc *rowContext) halfKey(at mapping.AttrInfo, all []mapping.AttrInfo) string {
	tbl := rc.a.p.Table
	if at.KeyType == "" || !strings.Contains(at.Path, ".index.") {
		return ""
	}
	// An attribute that keys another index too is never left off.
	uses := 0
	for _, ix := range tbl.Indexes {
		if ix.PK.Name == at.Name || (ix.SK != nil && ix.SK.Name == at.Name) {
			uses++
		}
	}
	if uses > 1 {
		return ""
	}
	for _, ix := range tbl.Indexes {
		if !ix.Global || ix.SK == nil || ix.KeepHalfKey || isTableKey(tbl, ix.PK.Name) || isTableKey(tbl, ix.SK.Name) {
			continue
		}
		other := ""
		switch at.Name {
		case ix.PK.Name:
			other = ix.SK.Name
		case ix.SK.Name:
			other = ix.PK.Name
		default:
			continue
		}
		for _, o := range all {
			if o.Name == other && rc.mayBeMissing(o) {
				return fmt.Sprintf("it is left off an item that lacks %s, the other half of index %s's key (half_key: drop)", other, ix.Name)
			}
		}
	}
	return ""
}

func isTableKey(t *mapping.TableSchema, name string) bool {
	return name == t.PK.Name || (t.SK != nil && name == t.SK.Name)
}

// mayBeMissing: an attribute a row can leave out (a NULL, or when:).
func (rc *rowContext) mayBeMissing(at mapping.AttrInfo) bool {
	if at.Conditional {
		return true
	}
	if at.Template != nil {
		for _, e := range at.Template.Exprs() {
			if rc.nullable(e.Position()) {
				return true
			}
		}
		return false
	}
	return at.Column >= 0 && rc.nullable(at.Column)
}

// template collects the uses of each expression of a template stored as
// src.Type in src.Attribute. attr: the template is an attribute, left out
// when a value is NULL (a table key's NULL rejects the row instead).
func (rc *rowContext) template(t *mapping.Template, src Source, holder, path, cond string, attr bool) {
	exprs := t.Exprs()
	if len(exprs) == 0 {
		return // a literal
	}
	if plain(t) {
		pos := exprs[0].Position()
		lossy, cav := stored(rc.cols[pos], rc.column(pos), src.Type, rc.a.driver)
		rc.uses = append(rc.uses, use{pos: pos, holder: holder, path: path, lossy: lossy, caveats: cav, cond: cond, rank: 1, src: src})
		return
	}
	shapes := make([]shape, len(exprs))
	for i, e := range exprs {
		pos := e.Position()
		shapes[i] = exprShape(rc.cols[pos].Kind, rc.column(pos), e.Transforms, rc.a.driver)
	}
	cut := parseBack(t.Parts(), shapes)
	for i, e := range exprs {
		part := src
		part.Template, part.Part = t.String(), i
		u := use{pos: e.Position(), holder: holder, path: path, lossy: orText(shapes[i].lossy, cut[i]), caveats: shapes[i].caveats, cond: cond, rank: 1, src: part}
		if attr && u.cond == "" {
			for _, o := range exprs {
				if o.Ref != e.Ref && rc.nullable(o.Position()) {
					u.cond = fmt.Sprintf("the whole attribute is left out when %s is NULL", o.Ref)
					break
				}
			}
		}
		rc.uses = append(rc.uses, u)
	}
}
