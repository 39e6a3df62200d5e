package mapping

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/value"
)

// compileItem builds one item plan; parent is set for items: entries,
// whose key, index and attributes extend the entity's.
func (c *entityCompiler) compileItem(path, name string, spec *ItemSpec, parent *Entity) *ItemPlan {
	tbl := c.plan.Table
	it := &ItemPlan{Name: name, Type: spec.Type}
	if it.Type == "" {
		switch {
		case parent != nil && parent.Type != "":
			it.Type = parent.Type + "#" + name
		case parent != nil:
			it.Type = c.name + "#" + name
		default:
			it.Type = c.name
		}
	}
	if tbl.TypeAttribute != "" {
		it.typeAV = &types.AttributeValueMemberS{Value: it.Type}
	}
	keys := spec.Key
	if parent != nil && keys.PK == "" {
		keys.PK = parent.Key.PK
	}
	pkPath, skPath := path+".key.pk", path+".key.sk"
	if parent != nil && spec.Key.PK == "" {
		pkPath = c.path + ".key.pk"
	}
	ok := true
	if keys.PK == "" {
		c.errs.add(pkPath, "missing the partition key template, e.g. pk: \"ORDER#${id}\"")
		ok = false
	} else if t, k, good := c.template(pkPath, keys.PK); good {
		it.PK = t
		ok = c.checkKeyKind(pkPath, t, k, tbl.PK.Type) && ok
	} else {
		ok = false
	}
	switch {
	case tbl.SK == nil && keys.SK != "":
		c.errs.add(skPath, "the table has no sort key; remove sk or declare target.key.sk")
		ok = false
	case tbl.SK != nil && keys.SK == "":
		c.errs.add(skPath, "missing the sort key template (the table's sort key is %s)", tbl.SK.Name)
		ok = false
	case tbl.SK != nil:
		if t, k, good := c.template(skPath, keys.SK); good {
			it.SK = t
			ok = c.checkKeyKind(skPath, t, k, tbl.SK.Type) && ok
		} else {
			ok = false
		}
	}

	seen := map[string]string{}
	addAttr := func(a *attrPlan) {
		if prev, dup := seen[a.name]; dup {
			c.errs.add(a.path, "attribute %q is already set at %s", a.name, prev)
			ok = false
			return
		}
		seen[a.name] = a.path
		a.json = jsonName(a.name)
		it.attrs = append(it.attrs, a)
	}
	reserved := func(p, name string) bool {
		switch {
		case name == tbl.PK.Name || (tbl.SK != nil && name == tbl.SK.Name):
			c.errs.add(p, "%q is the table's key; set it under key:", name)
		case name == tbl.TypeAttribute:
			c.errs.add(p, "%q is the type attribute, which dynafold sets from the entity's type", name)
		case name == tbl.TTLAttribute:
			c.errs.add(p, "%q is the TTL attribute; compute it with ttl: {from: COLUMN, offset: DURATION}", name)
		case name == "":
			c.errs.add(p, "empty attribute name")
		case len(name) > MaxAttributeNameBytes:
			c.errs.add(p, "attribute names are at most %d bytes", MaxAttributeNameBytes)
		default:
			return false
		}
		ok = false
		return true
	}

	// Index key templates are sugar for the attributes the index is keyed on.
	indexes := spec.Index
	if parent != nil {
		indexes = mergeIndex(parent.Index, spec.Index)
	}
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
		tmpls := ie.Value
		if tmpls == nil {
			continue
		}
		var when *condPlan
		if tmpls.When != nil {
			when = c.condition(ipath+".when", tmpls.When)
		}
		set := func(kpath string, attr *KeyAttr, src string) {
			if src == "" {
				return
			}
			if attr == nil {
				c.errs.add(kpath, "index %s has no sort key", ix.Name)
				ok = false
				return
			}
			if attr.Name == tbl.PK.Name || (tbl.SK != nil && attr.Name == tbl.SK.Name) {
				c.errs.add(kpath, "index %s uses the table's own key attribute %q here; it is set by key:", ix.Name, attr.Name)
				ok = false
				return
			}
			t, k, good := c.template(kpath, src)
			if !good {
				ok = false
				return
			}
			if !c.checkKeyKind(kpath, t, k, attr.Type) {
				ok = false
				return
			}
			addAttr(&attrPlan{name: attr.Name, path: kpath, tmpl: t, col: -1, typ: attr.Type, keyType: attr.Type, keyLimit: keyLimit(ix, attr), when: when, fromIndex: true})
		}
		if !ix.Global && tmpls.PK != "" {
			c.errs.add(ipath+".pk", "a local index shares the table's partition key; set only sk")
			ok = false
		} else {
			set(ipath+".pk", &ix.PK, tmpls.PK)
		}
		set(ipath+".sk", ix.SK, tmpls.SK)
	}

	attrs := spec.Attributes
	if parent != nil && (spec.Inherit == nil || *spec.Inherit) {
		attrs = append(append(OrderedMap[*AttributeSpec]{}, parent.Attributes...), spec.Attributes...)
	}
	for _, ae := range attrs {
		apath := path + ".attributes." + ae.Key
		if parent != nil && containsKey(parent.Attributes, ae.Key) && !containsKey(spec.Attributes, ae.Key) {
			apath = c.path + ".attributes." + ae.Key
		}
		if reserved(apath, ae.Key) {
			continue
		}
		a := c.attribute(apath, ae.Key, ae.Value)
		if a == nil {
			ok = false
			continue
		}
		addAttr(a)
	}

	if ttl := c.spec.TTL; ttl != nil && (parent == nil || name == firstItemName(parent)) {
		tpath := c.path + ".ttl"
		if tbl.TTLAttribute == "" {
			c.errs.add(tpath, "ttl: needs target.ttl_attribute, the attribute DynamoDB expires items by")
			ok = false
		} else if ttl.From == "" {
			c.errs.add(tpath+".from", "missing the column the expiry is computed from")
			ok = false
		} else {
			off, err := parseOffset(ttl.Offset)
			if err != nil {
				c.errs.add(tpath+".offset", "%v", err)
				ok = false
			}
			if i, k, found := c.column(tpath+".from", ParseColumnName(ttl.From)); found {
				switch k {
				case value.Timestamp, value.Date, value.Int, value.Decimal, value.Null:
					it.ttl = &ttlPlan{col: i, offset: off}
				default:
					c.errs.add(tpath+".from", "column %s is %s; a TTL is computed from a date, a timestamp or epoch seconds", ttl.From, k)
					ok = false
				}
			} else {
				ok = false
			}
		}
	}
	if !ok {
		return nil
	}
	it.halves = halfKeys(tbl, it.attrs)
	return it
}

// halfKeys lists the global indexes with a sort key whose two key
// attributes, neither of them the table's key, this item writes and so may
// get one without the other (a NULL in one template, a column that is
// NULL): such an item is not in the index, and the half it got is left off
// when it exists only for that index (written by an index: template,
// keying no other index), unless the index says half_key: keep.
func halfKeys(tbl *TableSchema, attrs []*attrPlan) []halfKey {
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
