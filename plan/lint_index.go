package plan

import (
	"slices"
	"strings"

	"github.com/dynafold/dynafold/mapping"
)

// The checks of indexes, attribute names and the existing table.

// longNameBytes is the attribute-name length past which a note says what
// the name costs: names are stored in every item and count toward its size
// and write units.
const longNameBytes = 32

// maxProjectedAttributes: the include: lists of all indexes of a table
// name at most 100 attributes together.
const maxProjectedAttributes = 100

// maxProjectedNameBytes: user-specified projected attribute names are at most
// 255 bytes.
const maxProjectedNameBytes = 255

// indexes checks how entities use the declared indexes.
func (l *linter) indexes() {
	tbl := l.tbl
	included := 0
	for _, ix := range tbl.Indexes {
		path := "target.indexes." + ix.Name
		keyAttrs := []string{ix.PK.Name}
		if ix.SK != nil {
			keyAttrs = append(keyAttrs, ix.SK.Name)
		}
		members := 0
		for _, r := range l.items {
			var set, unset []string
			for _, k := range keyAttrs {
				if r.has(tbl, k) {
					set = append(set, k)
				} else {
					unset = append(unset, k)
				}
			}
			switch {
			case len(unset) == 0:
				members++
			case len(set) > 0 && !allTableKeys(tbl, set):
				l.fs.add(Warning, Mapping, "index.partial_key", r.path+".index."+ix.Name, r.ent.Name,
					"%s sets %s but not %s, so its items never appear in index %s", r.label, strings.Join(set, ", "), strings.Join(unset, ", "), ix.Name)
			}
		}
		if members == 0 {
			l.fs.add(Note, Mapping, "index.unused", path, "",
				"no entity sets the key of index %s (%s), so it stays empty", ix.Name, strings.Join(keyAttrs, ", "))
		}
		if !ix.Global {
			l.fs.add(Note, Mapping, "index.lsi", path, "",
				"local index %s can only be created with the table (dynafold table create does), and with it every item collection (the items of one %s value and their index entries) is limited to 10 GB; see the measured collection sizes",
				ix.Name, tbl.PK.Name)
			if l.target != nil && l.target.Exists && !slices.Contains(l.target.LocalIndexes, ix.Name) {
				l.fs.add(Error, Mapping, "index.lsi_missing", path, "",
					"table %s exists without local index %s, and a local index cannot be added to an existing table: delete and recreate the table, or drop the index from the mapping", tbl.Name, ix.Name)
			}
		}
		switch ix.Projection {
		case "INCLUDE":
			included += len(ix.Include)
			for _, name := range ix.Include {
				_, isKey := tbl.KeyAttrType(name)
				switch {
				case len(name) > maxProjectedNameBytes:
					l.fs.add(Error, Mapping, "name.length", path+".include", "",
						"projected attribute names are at most %d bytes; %.20q… is %d", maxProjectedNameBytes, name, len(name))
				case isKey:
					l.fs.add(Note, Mapping, "index.projection", path+".include", "",
						"%s is a key attribute, which every index projects anyway", name)
				case !l.written(name):
					l.fs.add(Warning, Mapping, "index.projection", path+".include", "",
						"index %s projects %s, which no entity writes", ix.Name, name)
				}
			}
			if tbl.TypeAttribute != "" && !slices.Contains(ix.Include, tbl.TypeAttribute) {
				l.fs.add(Warning, Mapping, "index.type_not_projected", path+".include", "",
					"index %s does not project the type attribute %s: queries on it cannot tell entities apart; add %s to include:", ix.Name, tbl.TypeAttribute, tbl.TypeAttribute)
			}
		case "KEYS_ONLY":
			if tbl.TypeAttribute != "" {
				l.fs.add(Warning, Mapping, "index.type_not_projected", path+".projection", "",
					"index %s projects keys only, not the type attribute %s: queries on it cannot tell entities apart; use projection: include with include: [%s]", ix.Name, tbl.TypeAttribute, tbl.TypeAttribute)
			}
		}
	}
	if included > maxProjectedAttributes {
		l.fs.add(Error, Mapping, "index.projection", "target.indexes", "",
			"the include: lists of all indexes name %d attributes together; DynamoDB allows %d per table", included, maxProjectedAttributes)
	}
}

func allTableKeys(tbl *mapping.TableSchema, names []string) bool {
	for _, n := range names {
		if n != tbl.PK.Name && (tbl.SK == nil || n != tbl.SK.Name) {
			return false
		}
	}
	return true
}

// written reports whether any item sets the attribute.
func (l *linter) written(name string) bool {
	if name == l.tbl.TypeAttribute && name != "" {
		return true
	}
	for _, r := range l.items {
		if r.has(l.tbl, name) || (name == l.tbl.TTLAttribute && r.it.HasTTL()) {
			return true
		}
	}
	return false
}

// names checks attribute names against DynamoDB's reserved words and
// notes long ones.
func (l *linter) names() {
	type named struct{ name, path string }
	var all []named
	seen := map[string]bool{}
	add := func(name, path string) {
		if name != "" && !seen[name] {
			seen[name] = true
			all = append(all, named{name, path})
		}
	}
	tbl := l.tbl
	add(tbl.PK.Name, "target.key.pk")
	if tbl.SK != nil {
		add(tbl.SK.Name, "target.key.sk")
	}
	for _, ix := range tbl.Indexes {
		if ix.Global {
			add(ix.PK.Name, "target.indexes."+ix.Name+".pk")
		}
		if ix.SK != nil {
			add(ix.SK.Name, "target.indexes."+ix.Name+".sk")
		}
	}
	add(tbl.TypeAttribute, "target.type_attribute")
	add(tbl.TTLAttribute, "target.ttl_attribute")
	for _, r := range l.items {
		for _, a := range r.attrs {
			add(a.Name, a.Path)
		}
	}
	for _, n := range all {
		if isReserved(n.name) {
			l.fs.add(Note, Mapping, "name.reserved", n.path, "",
				"%q is a DynamoDB reserved word: writes are fine, but queries, filters and updates must refer to it through an expression attribute name (#%s)", n.name, strings.ToLower(n.name))
		}
		if len(n.name) > longNameBytes {
			l.fs.add(Note, Mapping, "name.length", n.path, "",
				"attribute name %q is %d bytes; names are stored in every item and count toward its size and write units", n.name, len(n.name))
		}
	}
}

// targetState reports an existing table that migrate would refuse.
func (l *linter) targetState() {
	t := l.target
	if t == nil || !t.Exists || len(t.Differences) == 0 {
		return
	}
	l.fs.add(Warning, Mapping, "target.mismatch", "target", "",
		"table %s exists but differs from the mapping, and migrate refuses to write to it until it matches:\n  - %s", l.tbl.Name, strings.Join(t.Differences, "\n  - "))
}
