package reverse

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/dynafold/dynafold/source"
)

// verdicts judges each column of the row's table (or, without the
// schema, each column the row selects). key lists the columns that
// identify the row; ordered lists the columns that order nested elements
// (their position in a list does not give them back). Uses of ancestor
// columns, and lossy uses of columns held exactly elsewhere, become
// derived copies.
func (rc *rowContext) verdicts(key, ordered []string) []Column {
	byCol := map[string][]use{}
	for _, u := range rc.uses {
		name, ok := rc.own(u.pos)
		if !ok {
			rc.ancestor(u)
			continue
		}
		byCol[name] = append(byCol[name], u)
	}
	var names []string
	if rc.base != nil {
		for _, c := range rc.base.Columns {
			names = append(names, c.Name)
		}
	}
	for _, ref := range rc.cols {
		if ref.Alias == rc.child && !slices.Contains(names, ref.Name) {
			names = append(names, ref.Name)
		}
	}
	out := make([]Column, 0, len(names))
	for _, name := range names {
		var col *source.Column
		if rc.base != nil {
			col = rc.base.Column(name)
		}
		c := rc.judge(name, col, byCol[name], slices.Contains(key, name), slices.Contains(ordered, name))
		out = append(out, c)
	}
	return out
}

// judge decides one column from the uses that hold it.
func (rc *rowContext) judge(name string, col *source.Column, uses []use, key, ordered bool) Column {
	c := Column{Column: name, Nullable: true, PrimaryKey: key}
	if col != nil {
		c.Type, c.Nullable, c.HasDefault = col.DBType, col.Nullable, col.HasDefault
	}
	sort.SliceStable(uses, func(i, j int) bool { return uses[i].rank < uses[j].rank })
	var exact, conditional, lossy []use
	for _, u := range uses {
		switch {
		case u.lossy != "":
			lossy = append(lossy, u)
		case u.cond != "":
			conditional = append(conditional, u)
		default:
			exact = append(exact, u)
		}
	}
	switch {
	case col != nil && col.Generated:
		c.Status = Generated
		c.Reason = "the database computes it; it is never written"
		for _, u := range uses {
			rc.derived = append(rc.derived, Derived{Holder: u.holder, Source: name, Why: "a copy of a generated column"})
		}
		return c
	case len(exact) > 0:
		src := exact[0].src
		c.Status, c.Owner, c.Path, c.Caveats, c.Source = Owned, exact[0].holder, exact[0].path, exact[0].caveats, &src
		for _, u := range append(exact[1:], conditional...) {
			c.Also = append(c.Also, u.holder)
		}
		for _, u := range lossy {
			rc.derived = append(rc.derived, Derived{Holder: u.holder, Source: name, Why: u.lossy + "; the column comes back from " + c.Owner})
		}
		return c
	}
	c.Status = Irreversible
	fix := fmt.Sprintf("keep the raw value in an attribute, e.g. attributes: {%s: %s}", attrName(name), name)
	switch {
	case len(conditional) > 0:
		u := conditional[0]
		c.Path = u.path
		c.Reason = fmt.Sprintf("only %s holds it, and %s, so a missing attribute cannot be told from a NULL", u.holder, u.cond)
		c.Fix = fix
	case len(lossy) > 0:
		u := lossy[0]
		c.Path = u.path
		c.Reason = fmt.Sprintf("only %s holds it, and %s", u.holder, u.lossy)
		c.Fix = fix
	case key:
		c.Reason = "a primary-key column no attribute or key part holds: fail-back could not find the row"
		c.Fix = fix
	case ordered:
		c.Reason = "it orders the nested elements, but no element holds it: a position in the list does not give its value back"
		c.Fix = fmt.Sprintf("add it to the element's attributes, e.g. {%s: %s}", name, name)
	case c.Nullable:
		c.Status = Unmapped
		c.Reason = "no item holds it: an insert leaves it NULL, an update leaves it as it is"
	case c.HasDefault:
		c.Status = Unmapped
		c.Reason = "no item holds it: an insert gives it its default, an update leaves it as it is"
	case col == nil:
		c.Status = Unmapped
		c.Reason = "no item holds it (nullability unknown without the source schema)"
	default:
		c.Reason = "no item holds it, and it is NOT NULL without a default: an insert would fail"
		c.Fix = fix + "; or give the column a default"
	}
	return c
}

// ancestor records a use of a pre-joined ancestor's column as derived.
func (rc *rowContext) ancestor(u use) {
	ref := rc.cols[u.pos]
	why := "a pre-joined copy of an ancestor's column"
	for _, j := range rc.joins {
		if j.Alias != ref.Alias {
			continue
		}
		why = fmt.Sprintf("a pre-joined copy of %s.%s", j.Table, ref.Name)
		if w := rc.a.writers[j.Table]; len(w) > 0 {
			why += ", which " + strings.Join(w, " and ") + " writes back"
		} else {
			why += "; no entity maps " + j.Table.String() + ", so fail-back writes none of its rows"
		}
	}
	d := Derived{Holder: u.holder, Source: ref.String(), Why: why}
	if !slices.Contains(rc.derived, d) {
		rc.derived = append(rc.derived, d)
	}
}

// attrName suggests an attribute name for a column: user_id → UserID.
func attrName(col string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(col, func(r rune) bool { return r == '_' || r == '-' || r == ' ' }) {
		if strings.EqualFold(w, "id") {
			b.WriteString("ID")
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	if b.Len() == 0 {
		return "Raw"
	}
	return b.String()
}
