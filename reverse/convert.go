package reverse

import (
	"strings"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// stored says whether a column's value stored as an attribute of type t
// (TypeAuto: its natural type) comes back exactly: what is lost (""
// when nothing is) and the caveats. ref is the column as selected (a
// spatial column read as GeoJSON has Cast CastGeoJSON), col the source
// column (nil without the schema).
func stored(ref source.ColumnRef, col *source.Column, t mapping.AttrType, driver string) (lossy string, caveats []string) {
	k := ref.Kind
	if ref.Cast == source.CastWKT || ref.Cast == source.CastGeoJSON {
		return "", []string{"a spatial value comes back from its WKT or GeoJSON text; its SRID is not kept"}
	}
	isSet := col != nil && strings.HasPrefix(strings.ToLower(col.DBType), "set(")
	switch t {
	case mapping.TypeAuto:
		switch k {
		case value.Timestamp:
			return textShape(k, col, driver).lossy, textShape(k, col, driver).caveats
		case value.JSON:
			return "", jsonCaveat(col)
		case value.List:
			return "", listCaveats(ref, col, driver)
		}
		return "", nil
	case mapping.TypeS:
		switch k {
		case value.List:
			return "an array stored as text cannot be cut back into its elements", nil
		case value.JSON:
			return "", nil // the text as read
		}
		sh := textShape(k, col, driver)
		return sh.lossy, sh.caveats
	case mapping.TypeN:
		switch k {
		case value.String:
			return "text stored as a number loses its own form (\"007\", \"1.50\" and \" 7\" come back \"7\" and \"1.5\")", nil
		case value.Timestamp:
			if p := fraction(col, driver); p > 0 {
				return "", []string{secondsCaveat(p)}
			}
		}
		return "", nil
	case mapping.TypeB:
		return "", nil // bytes as they are, or text as its UTF-8 bytes
	case mapping.TypeBOOL:
		switch k {
		case value.Bool:
			return "", nil
		case value.Int:
			return "a number stored as BOOL comes back 0 or 1 only", nil
		}
		return "text stored as BOOL comes back as true or false only, not as written (\"yes\", \"t\", \"on\")", nil
	case mapping.TypeM, mapping.TypeL:
		switch {
		case k == value.JSON:
			return "", jsonCaveat(col)
		case k == value.List:
			return "", listCaveats(ref, col, driver)
		case isSet && t == mapping.TypeL:
			return "", nil // a SET's members, in the order the type defines
		}
		return "text read as JSON loses its own formatting (spaces, key order, number forms); store it as S to keep the text", nil
	case mapping.TypeSS, mapping.TypeNS, mapping.TypeBS:
		if isSet {
			return "", []string{"an empty SET is stored as no attribute and comes back NULL"}
		}
		return "a set keeps neither the order nor the duplicates of an array; store it as L", nil
	}
	return "", nil
}

func jsonCaveat(col *source.Column) []string {
	if col != nil && strings.EqualFold(col.DBType, "json") {
		return []string{"a json (not jsonb) value keeps its meaning but not its spacing, key order or duplicate keys"}
	}
	return nil
}

func listCaveats(ref source.ColumnRef, col *source.Column, driver string) []string {
	if ref.Elem == value.Timestamp {
		return []string{millisCaveat(fraction(nil, driver)) + " (array elements)"}
	}
	return nil
}
