package mapping

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/value"
)

// compileItems compiles the entity's one item, or each of its items:.
func (c *entityCompiler) compileItems() []*ItemPlan {
	e := c.spec
	var items []*ItemPlan
	if e.Items == nil {
		it := c.compileItem(c.path, "", &ItemSpec{Type: e.Type, Key: e.Key, Index: e.Index, Attributes: e.Attributes}, nil)
		if it != nil {
			items = append(items, it)
		}
		return items
	}
	if e.Key.SK != "" {
		c.errs.add(c.path+".key.sk", "with items:, each item sets its own key.sk")
	}
	if len(e.Items) == 0 {
		// Otherwise every row would be read and no item written.
		c.errs.add(c.path+".items", "name at least one item, or remove items:")
	}
	c.checkOverridden(e)
	for _, ie := range e.Items {
		spec := ie.Value
		if spec == nil {
			c.errs.add(c.path+".items."+ie.Key, "empty item definition")
			continue
		}
		it := c.compileItem(c.path+".items."+ie.Key, ie.Key, spec, e)
		if it != nil {
			items = append(items, it)
		}
	}
	return items
}

// compileItem builds one item plan; parent is set for items: entries,
// whose key, index and attributes extend the entity's. Every step runs,
// so that every problem is reported; the item is built only when none
// failed.
func (c *entityCompiler) compileItem(path, name string, spec *ItemSpec, parent *Entity) *ItemPlan {
	tbl := c.plan.Table
	it := &ItemPlan{Name: name, Type: c.itemType(name, spec, parent)}
	if tbl.TypeAttribute != "" {
		it.typeAV = &types.AttributeValueMemberS{Value: it.Type}
	}
	pk, sk, keyOK := c.itemKey(path, spec, parent)
	attrs := &itemAttrs{seen: map[string]string{}}
	indexOK := c.indexAttrs(attrs, path, spec, parent)
	attrsOK := c.itemAttributes(attrs, path, spec, parent)
	ttl, ttlOK := c.itemTTL(name, parent)
	if !keyOK || !indexOK || !attrsOK || !ttlOK {
		return nil
	}
	it.PK, it.SK, it.attrs, it.ttl = pk, sk, attrs.list, ttl
	sparse := c.sparseIndexes(spec, parent)
	it.halves = halfKeys(tbl, it.attrs, sparse)
	for _, ix := range tbl.Indexes {
		if !sparse[ix.Name] {
			continue
		}
		sp := sparseIndex{index: ix.Name}
		for _, k := range []*KeyAttr{&ix.PK, ix.SK} {
			if k != nil && k.Name != tbl.PK.Name && (tbl.SK == nil || k.Name != tbl.SK.Name) {
				sp.keys = append(sp.keys, k.Name)
			}
		}
		it.sparse = append(it.sparse, sp)
	}
	return it
}

// sparseIndexes are the indexes whose index: entry for this item (its
// own, or the entity's it inherits) says sparse: true.
func (c *entityCompiler) sparseIndexes(spec *ItemSpec, parent *Entity) map[string]bool {
	indexes := spec.Index
	if parent != nil {
		indexes = mergeIndex(parent.Index, spec.Index)
	}
	out := map[string]bool{}
	for _, ie := range indexes {
		if ie.Value != nil && ie.Value.Sparse {
			out[ie.Key] = true
		}
	}
	return out
}

// itemType is the item's type: its own, else the entity's (or the
// entity's name) with the item's name after a "#" for an item of items:.
func (c *entityCompiler) itemType(name string, spec *ItemSpec, parent *Entity) string {
	switch {
	case spec.Type != "":
		return spec.Type
	case parent != nil && parent.Type != "":
		return parent.Type + "#" + name
	case parent != nil:
		return c.name + "#" + name
	default:
		return c.name
	}
}

// itemKey compiles key.pk and key.sk; an item of items: without its own
// pk uses the entity's.
func (c *entityCompiler) itemKey(path string, spec *ItemSpec, parent *Entity) (pk, sk *Template, ok bool) {
	tbl := c.plan.Table
	keys := spec.Key
	if parent != nil && keys.PK == "" {
		keys.PK = parent.Key.PK
	}
	pkPath, skPath := path+".key.pk", path+".key.sk"
	if parent != nil && spec.Key.PK == "" {
		pkPath = c.path + ".key.pk"
	}
	ok = true
	if keys.PK == "" {
		c.errs.add(pkPath, "missing the partition key template, e.g. pk: \"ORDER#${id}\"")
		ok = false
	} else {
		pk, ok = c.keyTemplate(pkPath, keys.PK, tbl.PK.Type)
	}
	switch {
	case tbl.SK == nil && keys.SK != "":
		c.errs.add(skPath, "the table has no sort key; remove sk or declare target.key.sk")
		ok = false
	case tbl.SK != nil && keys.SK == "":
		c.errs.add(skPath, "missing the sort key template (the table's sort key is %s)", tbl.SK.Name)
		ok = false
	case tbl.SK != nil:
		var skOK bool
		sk, skOK = c.keyTemplate(skPath, keys.SK, tbl.SK.Type)
		ok = skOK && ok
	}
	return pk, sk, ok
}

// keyTemplate compiles a template whose values are a key attribute of
// type want.
func (c *entityCompiler) keyTemplate(path, src string, want AttrType) (*Template, bool) {
	t, k, ok := c.template(path, src)
	if !ok {
		return nil, false
	}
	return t, c.checkKeyKind(path, t, k, want)
}

// itemAttrs collects an item's attributes, each name once.
type itemAttrs struct {
	list []*attrPlan
	seen map[string]string // attribute name → the path that set it
}

// add appends a unless an attribute of that name is already set, which it
// reports.
func (as *itemAttrs) add(errs *Errors, a *attrPlan) bool {
	if prev, dup := as.seen[a.name]; dup {
		errs.add(a.path, "attribute %q is already set at %s", a.name, prev)
		return false
	}
	as.seen[a.name] = a.path
	a.json = jsonName(a.name)
	as.list = append(as.list, a)
	return true
}

// indexAttrs compiles the index: key templates, sugar for the attributes
// each index is keyed on; an item of items: has the entity's templates for
// the indexes it does not set itself.
func (c *entityCompiler) indexAttrs(attrs *itemAttrs, path string, spec *ItemSpec, parent *Entity) bool {
	tbl := c.plan.Table
	indexes := spec.Index
	if parent != nil {
		indexes = mergeIndex(parent.Index, spec.Index)
	}
	ok := true
	for _, ie := range indexes {
		ipath := path + ".index." + ie.Key
		if _, own := spec.Index.Get(ie.Key); parent != nil && !own {
			ipath = c.path + ".index." + ie.Key // written on the entity, not the item
		}
		ix := tbl.Index(ie.Key)
		if ix == nil {
			c.errs.add(ipath, "index %q is not declared under target.indexes (declared: %s)", ie.Key, strings.Join(indexNames(tbl), ", "))
			ok = false
			continue
		}
		if ie.Value == nil {
			continue
		}
		ok = c.indexKeyAttrs(attrs, ipath, ix, ie.Value) && ok
	}
	return ok
}

// indexKeyAttrs compiles one index's pk and sk templates.
func (c *entityCompiler) indexKeyAttrs(attrs *itemAttrs, ipath string, ix *Index, tmpls *IndexTemplates) bool {
	var when *condPlan
	if tmpls.When != nil {
		when = c.condition(ipath+".when", tmpls.When)
	}
	ok := true
	if tmpls.Sparse && tmpls.When == nil && !mayBeMissing(tmpls.PK) && !mayBeMissing(tmpls.SK) {
		c.errs.add(ipath+".sparse", "sparse: true, but nothing leaves an item out of index %s: its templates name no column (${…}) that can be NULL and there is no when:", ix.Name)
		ok = false
	}
	if !ix.Global && tmpls.PK != "" {
		c.errs.add(ipath+".pk", "a local index shares the table's partition key; set only sk")
		ok = false
	} else {
		ok = c.indexKeyAttr(attrs, ipath+".pk", ix, &ix.PK, tmpls.PK, when)
	}
	return c.indexKeyAttr(attrs, ipath+".sk", ix, ix.SK, tmpls.SK, when) && ok
}

// mayBeMissing reports whether a template names a column, whose NULL
// would leave the attribute out (a literal is always there).
func mayBeMissing(src string) bool {
	t, err := ParseTemplate(src)
	return err == nil && len(t.Exprs()) > 0
}

// indexKeyAttr compiles the template src of the key attribute attr of
// index ix (nil: the index has no sort key) and adds the attribute.
func (c *entityCompiler) indexKeyAttr(attrs *itemAttrs, kpath string, ix *Index, attr *KeyAttr, src string, when *condPlan) bool {
	tbl := c.plan.Table
	if src == "" {
		return true
	}
	if attr == nil {
		c.errs.add(kpath, "index %s has no sort key", ix.Name)
		return false
	}
	if attr.Name == tbl.PK.Name || (tbl.SK != nil && attr.Name == tbl.SK.Name) {
		c.errs.add(kpath, "index %s uses the table's own key attribute %q here; it is set by key:", ix.Name, attr.Name)
		return false
	}
	t, ok := c.keyTemplate(kpath, src, attr.Type)
	if !ok {
		return false
	}
	return attrs.add(c.errs, &attrPlan{name: attr.Name, path: kpath, tmpl: t, col: -1, typ: attr.Type, keyType: attr.Type, keyLimit: keyLimit(ix, attr), when: when, fromIndex: true})
}

// itemAttributes compiles attributes:; an item of items: has the entity's
// too unless it says inherit: false.
func (c *entityCompiler) itemAttributes(attrs *itemAttrs, path string, spec *ItemSpec, parent *Entity) bool {
	all := spec.Attributes
	if parent != nil && (spec.Inherit == nil || *spec.Inherit) {
		all = append(append(OrderedMap[*AttributeSpec]{}, parent.Attributes...), spec.Attributes...)
	}
	ok := true
	for _, ae := range all {
		apath := path + ".attributes." + ae.Key
		if parent != nil && containsKey(parent.Attributes, ae.Key) && !containsKey(spec.Attributes, ae.Key) {
			apath = c.path + ".attributes." + ae.Key
		}
		if c.reservedAttr(apath, ae.Key) {
			ok = false
			continue
		}
		a := c.attribute(apath, ae.Key, ae.Value)
		if a == nil {
			ok = false
			continue
		}
		ok = attrs.add(c.errs, a) && ok
	}
	return ok
}

// reservedAttr reports name when attributes: may not set it: a key, type
// or TTL attribute that dynafold sets otherwise, or a name DynamoDB
// rejects.
func (c *entityCompiler) reservedAttr(path, name string) bool {
	tbl := c.plan.Table
	switch {
	case name == tbl.PK.Name || (tbl.SK != nil && name == tbl.SK.Name):
		c.errs.add(path, "%q is the table's key; set it under key:", name)
	case name == tbl.TypeAttribute:
		c.errs.add(path, "%q is the type attribute, which dynafold sets from the entity's type", name)
	case name == tbl.TTLAttribute:
		c.errs.add(path, "%q is the TTL attribute; compute it with ttl: {from: COLUMN, offset: DURATION}", name)
	case name == "":
		c.errs.add(path, "empty attribute name")
	case len(name) > MaxAttributeNameBytes:
		c.errs.add(path, "attribute names are at most %d bytes", MaxAttributeNameBytes)
	default:
		return false
	}
	return true
}

// itemTTL compiles the entity's ttl:, which only its first item of items:
// carries.
func (c *entityCompiler) itemTTL(name string, parent *Entity) (*ttlPlan, bool) {
	ttl := c.spec.TTL
	if ttl == nil || (parent != nil && name != firstItemName(parent)) {
		return nil, true
	}
	tpath := c.path + ".ttl"
	if c.plan.Table.TTLAttribute == "" {
		c.errs.add(tpath, "ttl: needs target.ttl_attribute, the attribute DynamoDB expires items by")
		return nil, false
	}
	if ttl.From == "" {
		c.errs.add(tpath+".from", "missing the column the expiry is computed from")
		return nil, false
	}
	off, err := parseOffset(ttl.Offset)
	if err != nil {
		c.errs.add(tpath+".offset", "%v", err)
	}
	i, k, found := c.column(tpath+".from", ParseColumnName(ttl.From))
	if !found {
		return nil, false
	}
	switch k {
	case value.Timestamp, value.Date, value.Int, value.Decimal, value.Null:
		return &ttlPlan{col: i, offset: off}, err == nil
	default:
		c.errs.add(tpath+".from", "column %s is %s; a TTL is computed from a date, a timestamp or epoch seconds", ttl.From, k)
		return nil, false
	}
}

// halfKeys lists the global indexes with a sort key whose two key
// attributes, neither of them the table's key, this item writes and so may
// get one without the other (a NULL in one template, a column that is
// NULL): such an item is not in the index, and the half it got is left off
// when it exists only for that index (written by an index: template,
// keying no other index), unless the index says half_key: keep.
func halfKeys(tbl *TableSchema, attrs []*attrPlan, sparse map[string]bool) []halfKey {
	tableKey := func(n string) bool { return n == tbl.PK.Name || (tbl.SK != nil && n == tbl.SK.Name) }
	produced := map[string]bool{}
	onlyIndex := map[string]bool{} // produced by index: templates alone, not attributes:
	for _, a := range attrs {
		if !produced[a.name] {
			onlyIndex[a.name] = true
		}
		produced[a.name] = true
		onlyIndex[a.name] = onlyIndex[a.name] && a.fromIndex
	}
	// keyUses counts the indexes each attribute keys.
	keyUses := map[string]int{}
	for _, ix := range tbl.Indexes {
		keyUses[ix.PK.Name]++
		if ix.SK != nil && ix.SK.Name != ix.PK.Name {
			keyUses[ix.SK.Name]++
		}
	}
	var out []halfKey
	for _, ix := range tbl.Indexes {
		if !ix.Global || ix.SK == nil {
			continue // a local index's partition key is the table's: always there
		}
		pk, sk := ix.PK.Name, ix.SK.Name
		// With the table's own key as one half, a missing other half is
		// the ordinary sparse index: nothing is written in vain. An item
		// that never writes one half is never in the index at all.
		if tableKey(pk) || tableKey(sk) || !produced[pk] || !produced[sk] {
			continue
		}
		out = append(out, halfKey{
			index: ix.Name, pk: pk, sk: sk,
			dropPK: !ix.KeepHalfKey && onlyIndex[pk] && keyUses[pk] == 1,
			dropSK: !ix.KeepHalfKey && onlyIndex[sk] && keyUses[sk] == 1,
			sparse: sparse[ix.Name],
		})
	}
	return out
}

// checkOverridden parses the entity's key.pk and index templates that
// every item of items: replaces with its own. They are never compiled, but
// a malformed one must not pass validation unnoticed.
func (c *entityCompiler) checkOverridden(e *Entity) {
	pkUsed := false
	indexUsed := map[string]bool{}
	for _, ie := range e.Items {
		if ie.Value == nil {
			continue
		}
		pkUsed = pkUsed || ie.Value.Key.PK == ""
		for _, ix := range e.Index {
			if _, over := ie.Value.Index.Get(ix.Key); !over {
				indexUsed[ix.Key] = true
			}
		}
	}
	check := func(path, src string) {
		if src == "" {
			return
		}
		if _, err := ParseTemplate(src); err != nil {
			c.errs.add(path, "bad template %q: %v", src, err)
		}
	}
	if !pkUsed {
		check(c.path+".key.pk", e.Key.PK)
	}
	for _, ix := range e.Index {
		if !indexUsed[ix.Key] && ix.Value != nil {
			check(c.path+".index."+ix.Key+".pk", ix.Value.PK)
			check(c.path+".index."+ix.Key+".sk", ix.Value.SK)
		}
	}
}

func firstItemName(e *Entity) string {
	if len(e.Items) == 0 {
		return ""
	}
	return e.Items[0].Key
}

func containsKey[T any](m OrderedMap[T], k string) bool {
	_, ok := m.Get(k)
	return ok
}

// mergeIndex lets an item's index templates replace the entity's, per index.
func mergeIndex(base, over OrderedMap[*IndexTemplates]) OrderedMap[*IndexTemplates] {
	out := OrderedMap[*IndexTemplates]{}
	for _, e := range base {
		if _, replaced := over.Get(e.Key); !replaced {
			out = append(out, e)
		}
	}
	return append(out, over...)
}

func indexNames(t *TableSchema) []string {
	if len(t.Indexes) == 0 {
		return []string{"none"}
	}
	out := make([]string, len(t.Indexes))
	for i, ix := range t.Indexes {
		out[i] = ix.Name
	}
	return out
}

func keyLimit(ix *Index, attr *KeyAttr) int {
	if attr == &ix.PK {
		return MaxPartitionKeyBytes
	}
	return MaxSortKeyBytes
}
