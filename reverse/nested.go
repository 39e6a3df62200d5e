package reverse

import (
	"fmt"
	"strings"

	"github.com/dynafold/dynafold/mapping"
)

// nested judges one nest: entry: each column of the child table comes
// back from an element attribute, the map's keys, or (the pairing
// columns) the parent's key.
func (a *analyzer) nested(e *Entity, np *mapping.NestPlan) *Nested {
	path := e.Path + ".nest." + np.Name
	n := &Nested{Attribute: np.Name, Path: path, Form: "list", Overflow: np.Overflow(), Columns: []Column{}}
	j := childJoin(np)
	if j == nil {
		n.Problems = append(n.Problems, Problem{Path: path, Reason: "the child table is unknown", Fix: "set from:"})
		return n
	}
	n.Table = j.Table.String()
	rc := &rowContext{a: a, cols: np.Query.Columns, base: a.table(j.Table), child: j.Alias}
	els := np.Elements()
	for _, el := range els {
		rc.attribute(el, els, "", " of each element")
	}
	if pos, ok := np.MapKey(); ok {
		n.Form = "map"
		sh := textShape(rc.cols[pos].Kind, rc.column(pos), a.driver)
		rc.uses = append(rc.uses, use{pos: pos, holder: "the map's keys", path: path + ".key", lossy: sh.lossy, caveats: sh.caveats, src: Source{MapKey: true}})
	}
	ordered := np.Query.Key[np.ParentKeyLen:]
	n.Columns = rc.verdicts(nil, ordered)
	parent := map[string]Column{}
	for _, c := range e.Columns {
		parent[c.Column] = c
	}
	for _, on := range j.On {
		for i := range n.Columns {
			c := &n.Columns[i]
			if c.Column != on.Column {
				continue
			}
			pc, known := parent[on.RefColumn]
			*c = Column{Column: c.Column, Type: c.Type, Nullable: c.Nullable, HasDefault: c.HasDefault, PrimaryKey: c.PrimaryKey,
				Status: Owned, Owner: fmt.Sprintf("the parent's column %s (nest on:)", on.RefColumn), Path: path + ".on." + on.Column}
			if known && pc.Status != Owned {
				c.Status, c.Owner = Irreversible, ""
				c.Reason = fmt.Sprintf("it pairs with the parent's column %s, which does not come back", on.RefColumn)
				c.Fix = "make the parent's column reversible"
			}
		}
	}
	for _, d := range rc.derived {
		e.Derived = append(e.Derived, Derived{Holder: d.Holder + " (in " + np.Name + ")", Source: d.Source, Why: d.Why})
	}
	switch np.Overflow() {
	case "split":
		parts, part := np.PartAttributes()
		n.Notes = append(n.Notes, fmt.Sprintf("past max_bytes the item splits into parts (sort key …#PART#0001 on, each with %s; the head item has %s): fail-back reassembles the elements from the parts, in order, before it compares them with the rows", part, parts))
		e.Derived = append(e.Derived,
			Derived{Holder: "attribute " + parts, Why: "the part count of a split item"},
			Derived{Holder: "attribute " + part + " and the …#PART#NNNN items", Why: "the parts of a split " + np.Name + ", reassembled into its elements"})
	case "gzip":
		n.Notes = append(n.Notes, "past max_bytes the attribute is stored gzip-compressed (B, the elements' plain JSON): fail-back unzips it and reads each element by the mapping's element types")
	}
	n.Notes = append(n.Notes, fmt.Sprintf("a change of %s becomes inserts, updates and deletes of %s rows, matched by the parent's key and %s", np.Name, n.Table, strings.Join(ordered, ", ")))
	n.Reversible = len(n.Problems) == 0
	for _, c := range n.Columns {
		n.Reversible = n.Reversible && c.Status != Irreversible
	}
	return n
}
