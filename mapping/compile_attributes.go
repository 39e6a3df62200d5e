package mapping

import (
	"strings"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// attribute compiles one entry of attributes:.
func (c *entityCompiler) attribute(path, name string, spec *AttributeSpec) *attrPlan {
	if spec == nil {
		c.errs.add(path, "missing attribute definition")
		return nil
	}
	a := &attrPlan{name: name, path: path, col: -1}
	t, okType := parseAttrType(spec.Type)
	if !okType {
		c.errs.add(path+".type", "unknown type %q (S, N, B, BOOL, M, L, SS, NS, BS)", spec.Type)
		return nil
	}
	a.typ = t
	if !c.indexKeyType(path, a) {
		return nil
	}
	n := 0
	if spec.From != "" {
		n++
	}
	if spec.Template != "" {
		n++
	}
	if spec.Value != nil {
		n++
	}
	if n != 1 {
		c.errs.add(path, "set exactly one of from:, template: or value:")
		return nil
	}
	switch {
	case spec.From != "":
		i, k, found := c.column(path+fromSuffix(spec), ParseColumnName(spec.From))
		if !found {
			return nil
		}
		if col := c.columnOf(ParseColumnName(spec.From)); a.typ == TypeM && col != nil && col.Cast == source.CastWKT {
			// A spatial column as M: GeoJSON, read through its own select
			// expression beside the WKT one.
			i = c.addSpatialJSON(ParseColumnName(spec.From), col)
		} else if (a.typ == TypeSS || a.typ == TypeL) && k == value.String && c.isSetColumn(ParseColumnName(spec.From)) {
			// A MySQL SET arrives as "a,b": its members make the set or list.
			a.setCol = true
		} else if !convertible(k, a.typ) {
			c.errs.add(path, "column %s is %s and cannot be stored as %s", spec.From, k, a.typ)
			return nil
		}
		a.col, a.kind = i, k
		if a.keyType != "" {
			// Index keys are evaluated as templates (sparse rule, key checks).
			ref := ParseColumnName(spec.From)
			a.tmpl = &Template{src: "${" + ref.String() + "}", parts: []tpart{{expr: &Expr{Ref: ref, col: i}}}}
		}
	case spec.Template != "":
		t, k, good := c.template(path+templateSuffix(spec), spec.Template)
		if !good {
			return nil
		}
		if !convertible(k, a.typ) {
			c.errs.add(path, "template %q gives %s values, which cannot be stored as %s", spec.Template, k, a.typ)
			return nil
		}
		a.tmpl, a.kind = t, k
	default:
		a.kind = value.String
		av, err := Convert(value.StringValue(*spec.Value), a.typ)
		if err != nil {
			c.errs.add(path+".value", "%v", err)
			return nil
		}
		a.constant = av
	}
	return a
}

// indexKeyType gives an attribute that is an index key the key's type and
// size limit; false when it declares another type.
func (c *entityCompiler) indexKeyType(path string, a *attrPlan) bool {
	kt, isKey := c.plan.Table.KeyAttrType(a.name)
	if !isKey {
		return true
	}
	// An attribute that is an index key must have the key's type; a
	// NULL or empty value leaves the item out of the index.
	if a.typ != TypeAuto && a.typ != kt {
		c.errs.add(path+".type", "%q is an index key of type %s", a.name, kt)
		return false
	}
	a.typ, a.keyType, a.keyLimit = kt, kt, MaxSortKeyBytes
	for _, ix := range c.plan.Table.Indexes {
		if ix.PK.Name == a.name {
			a.keyLimit = MaxPartitionKeyBytes
		}
	}
	return true
}

func fromSuffix(s *AttributeSpec) string {
	if s.shorthand {
		return ""
	}
	return ".from"
}

func templateSuffix(s *AttributeSpec) string {
	if s.shorthand {
		return ""
	}
	return ".template"
}

// columnOf is the source column ref names, or nil.
func (c *entityCompiler) columnOf(ref ColumnName) *source.Column {
	t := c.base
	if ref.Alias != "" {
		t = c.joins[ref.Alias]
	}
	if t == nil {
		return nil
	}
	return t.Column(ref.Name)
}

// isSetColumn reports whether the column is a MySQL SET.
func (c *entityCompiler) isSetColumn(ref ColumnName) bool {
	col := c.columnOf(ref)
	return col != nil && strings.HasPrefix(strings.ToLower(col.DBType), "set(")
}

// addSpatialJSON selects a spatial column as GeoJSON (once) and returns
// its position.
func (c *entityCompiler) addSpatialJSON(ref ColumnName, col *source.Column) int {
	key := ColumnName{Alias: ref.Alias, Name: ref.Name + "\x00geojson"}
	if i, ok := c.index[key]; ok {
		return i
	}
	alias := ref.Alias
	if alias == "" {
		alias = c.defaultAlias
	}
	c.cols = append(c.cols, source.ColumnRef{Alias: alias, Name: ref.Name, Cast: source.CastGeoJSON, Kind: value.JSON})
	c.kinds = append(c.kinds, value.JSON)
	c.index[key] = len(c.cols) - 1
	return len(c.cols) - 1
}

// convertible reports whether values of kind k can ever be stored as t.
func convertible(k value.Kind, t AttrType) bool {
	if k == value.Null {
		return true // static validation: kind unknown
	}
	switch t {
	case TypeAuto, TypeS:
		return true
	case TypeN:
		return k != value.Bytes && k != value.List && k != value.JSON
	case TypeB:
		return k == value.Bytes || k == value.String
	case TypeBOOL:
		return k == value.Bool || k == value.Int || k == value.String
	case TypeM, TypeL:
		return k == value.JSON || k == value.String || (t == TypeL && k == value.List)
	case TypeSS, TypeNS:
		return k == value.List || k == value.JSON
	case TypeBS:
		return k == value.List
	}
	return false
}
