package mapping

import (
	"math"

	"github.com/dynafold/dynafold/value"
)

// This file lets tools that inspect a compiled plan (dynafold plan) see
// what the item builders do: the parts of a template, the attributes an
// item sets, and items measured without DynamoDB's size limits so that a
// row breaking them can be reported with its sizes.

// TemplatePart is one piece of a template: literal text, or an expression
// when Expr is set.
type TemplatePart struct {
	Lit  string
	Expr *Expr
}

// Parts returns the template's literal text and expressions in order.
func (t *Template) Parts() []TemplatePart {
	out := make([]TemplatePart, len(t.parts))
	for i, p := range t.parts {
		out[i] = TemplatePart{Lit: p.lit, Expr: p.expr}
	}
	return out
}

// Position returns the row position of the expression's column, as set by
// Compile (see EntityPlan.ColumnNames and the Query's Columns).
func (e *Expr) Position() int { return e.col }

// AttrInfo describes one attribute an item sets besides the table's key,
// the type attribute and the TTL attribute.
type AttrInfo struct {
	Name string
	// Path is the mapping key path that defines it.
	Path string
	// Column is the row position when the value is read straight from a
	// column, else -1.
	Column int
	// Template is set when the value is computed from a template (index
	// keys always are).
	Template *Template
	// Constant is set for value: attributes.
	Constant bool
	// KeyType is S, N or B when the attribute is a key of an index, else "".
	KeyType AttrType
	// Type is the DynamoDB type the attribute is stored as: the declared
	// type, else the natural type of its column or template; "" when that
	// is not known (a plan compiled without the source schema). A JSON
	// column is M here, though a document that is an array becomes L.
	Type AttrType
	// Conditional is set when a when: condition can leave it out.
	Conditional bool
}

// Attributes lists the attributes the item sets, in mapping order.
func (it *ItemPlan) Attributes() []AttrInfo {
	out := make([]AttrInfo, len(it.attrs))
	for i, a := range it.attrs {
		out[i] = AttrInfo{
			Name: a.name, Path: a.path, Column: a.col, Template: a.tmpl,
			Constant: a.constant != nil, KeyType: a.keyType, Conditional: a.when != nil,
			Type: a.storedType(),
		}
	}
	return out
}

// storedType is AttrInfo.Type.
func (a *attrPlan) storedType() AttrType {
	switch {
	case a.typ != TypeAuto:
		return a.typ
	case a.kind == value.Null:
		return TypeAuto
	}
	return naturalType(a.kind)
}

// HasTTL reports whether the item carries the table's TTL attribute.
func (it *ItemPlan) HasTTL() bool { return it.ttl != nil }

// BuildUnchecked builds a row's items like Build but without enforcing
// DynamoDB's limits on item size and key length, so that a row Build
// rejects for its size can be measured. Every other rule (NULL or empty
// table keys, conversions) still applies and returns a *RowError. The
// items it returns may be impossible to write.
//
// A split aggregate is split as Build splits it; an element too large for
// any part gets a part of its own, over the limit.
func (e *EntityPlan) BuildUnchecked(row value.Row, nested [][]value.Row, dst []Item) ([]Item, error) {
	return e.build(row, nested, dst, nil, limits{item: math.MaxInt, pk: math.MaxInt, sk: math.MaxInt, split: SplitItemBytes, lax: true})
}

// Type is the DynamoDB type of the nested attribute: M for a map of the
// child rows (key:), L for a list.
func (np *NestPlan) Type() AttrType {
	if np.asMap {
		return TypeM
	}
	return TypeL
}

// ItemIndex is the position, in the entity's Items, of the item that
// carries the nested attribute.
func (np *NestPlan) ItemIndex() int { return np.item }

// TTLSource is the column position and offset in seconds the item's TTL
// attribute is computed from; ok is false when the item has none.
func (it *ItemPlan) TTLSource() (col int, offset int64, ok bool) {
	if it.ttl == nil {
		return -1, 0, false
	}
	return it.ttl.col, it.ttl.offset, true
}

// Elements describes the attributes of each element, in mapping order.
// Their Column positions are child row positions (ChildColumnNames).
func (np *NestPlan) Elements() []AttrInfo {
	out := make([]AttrInfo, len(np.elems))
	for i, a := range np.elems {
		out[i] = AttrInfo{
			Name: a.name, Path: a.path, Column: a.col, Template: a.tmpl,
			Constant: a.constant != nil, Type: a.storedType(),
		}
	}
	return out
}

// MapKey is the child row position whose text keys each element of a
// map (as: map); ok is false for a list.
func (np *NestPlan) MapKey() (pos int, ok bool) { return np.mapKey, np.asMap }

// Overflow is what happens past max_bytes: reject, split or gzip.
func (np *NestPlan) Overflow() string { return np.overflow }

// PartAttributes are the names of the part count on a split item's head
// and of the part number on each of its parts.
func (np *NestPlan) PartAttributes() (parts, part string) { return np.partsAttr, np.partAttr }
