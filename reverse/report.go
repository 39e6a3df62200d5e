package reverse

import "github.com/dynafold/dynafold/mapping"

// Report is the reversibility of a whole mapping. Its JSON form is part of
// plan's --output json and --report under --reversible.
type Report struct {
	// Reversible: every entity is.
	Reversible bool      `json:"reversible"`
	Entities   []*Entity `json:"entities"`
	// lineOf finds the line of a mapping key path (nil: entity lines only).
	lineOf func(path string) int
}

// Entity is one entity's verdict, column by column.
type Entity struct {
	Entity string `json:"entity"`
	// Table is the source table its rows go back to; "" for a query.
	Table string `json:"table,omitempty"`
	// Path is the entity's mapping key path, Line its line in the file
	// (0 when unknown).
	Path       string `json:"path"`
	Line       int    `json:"line,omitempty"`
	Reversible bool   `json:"reversible"`
	// RecognizedBy says how an item is told to be this entity's.
	RecognizedBy string `json:"recognized_by,omitempty"`
	// Problems are reasons the entity as a whole cannot reverse.
	Problems []Problem `json:"problems,omitempty"`
	Columns  []Column  `json:"columns"`
	// Derived are the copies ignored on the way back.
	Derived []Derived `json:"derived,omitempty"`
	Nested  []*Nested `json:"nested,omitempty"`
	Notes   []string  `json:"notes,omitempty"`
}

// Status is what becomes of one column on the way back.
type Status string

// The statuses.
const (
	// Owned: an attribute or key part gives the column's value back
	// exactly.
	Owned Status = "owned"
	// Unmapped: no item holds the column; an insert leaves it NULL or
	// to its default, an update leaves it as it is.
	Unmapped Status = "unmapped"
	// Generated: the database computes it; it is never written.
	Generated Status = "generated"
	// Irreversible: the row cannot be rebuilt (see Reason and Fix).
	Irreversible Status = "irreversible"
)

// Column is one source column's verdict.
type Column struct {
	Column string `json:"column"`
	// Type is the database's type name, when the schema is known.
	Type       string `json:"type,omitempty"`
	Nullable   bool   `json:"nullable"`
	HasDefault bool   `json:"has_default,omitempty"`
	PrimaryKey bool   `json:"primary_key,omitempty"`
	Status     Status `json:"status"`
	// Owner is what fail-back reads the value from, e.g. `attribute
	// ServerID` or `key SK "VOTE#${id|pad:8}"`; Also are other exact
	// holders of it.
	Owner string   `json:"owner,omitempty"`
	Also  []string `json:"also,omitempty"`
	// Source is the owner in the form fail-back reads it by; nil for a
	// nest's pairing column, which is the parent's key column.
	Source *Source `json:"source,omitempty"`
	// Path is the mapping key path of the owner, or of the use that
	// loses the value when the column is irreversible.
	Path    string   `json:"path,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Fix     string   `json:"fix,omitempty"`
	Caveats []string `json:"caveats,omitempty"`
}

// Source is where an owned column's value is read from: attribute
// Attribute of the item (Item names the item of items:, "" for an entity
// of one item), converted back from Type; when Template is set, from the
// text of its Part-th ${…} (counted from 0), cut out of the attribute. For a
// nested column, Attribute is the element's attribute, or MapKey says the
// value is the element's key in the map. TTLOffset is subtracted from a
// TTL attribute.
type Source struct {
	Item      string           `json:"item,omitempty"`
	Attribute string           `json:"attribute,omitempty"`
	Type      mapping.AttrType `json:"type,omitempty"`
	Template  string           `json:"template,omitempty"`
	Part      int              `json:"part,omitempty"`
	MapKey    bool             `json:"map_key,omitempty"`
	TTLOffset int64            `json:"ttl_offset_seconds,omitempty"`
}

// Derived is a copy of a value that fail-back ignores.
type Derived struct {
	// Holder is the attribute or key part, Source the column it copies.
	Holder string `json:"holder"`
	Source string `json:"source,omitempty"`
	Why    string `json:"why"`
}

// Problem is a reason an entity or a nested attribute cannot reverse as a
// whole.
type Problem struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	Fix    string `json:"fix"`
}

// Nested is one nest: entry: the child rows folded into an attribute.
type Nested struct {
	Attribute  string    `json:"attribute"`
	Table      string    `json:"table"`
	Path       string    `json:"path"`
	Form       string    `json:"form"` // list or map
	Overflow   string    `json:"overflow"`
	Reversible bool      `json:"reversible"`
	Problems   []Problem `json:"problems,omitempty"`
	Columns    []Column  `json:"columns"`
	Notes      []string  `json:"notes,omitempty"`
}

// Failure is one thing that cannot reverse, for error findings.
type Failure struct {
	Entity string
	// Column is "" for a problem of the entity or nest as a whole; a
	// nested child's column is "attribute.column".
	Column string
	Path   string
	// Line is the line in the mapping file of what Path names (the
	// attribute, index, nest or item entry, else the entity), 0 when
	// unknown.
	Line   int
	Reason string
	Fix    string
}

// Failures lists what cannot reverse, in mapping order.
func (r *Report) Failures() []Failure {
	var out []Failure
	for _, e := range r.Entities {
		for _, p := range e.Problems {
			out = append(out, Failure{Entity: e.Entity, Path: p.Path, Line: e.Line, Reason: p.Reason, Fix: p.Fix})
		}
		for _, c := range e.Columns {
			if c.Status == Irreversible {
				out = append(out, Failure{Entity: e.Entity, Column: c.Column, Path: orPath(c.Path, e.Path), Line: e.Line, Reason: c.Reason, Fix: c.Fix})
			}
		}
		for _, n := range e.Nested {
			for _, p := range n.Problems {
				out = append(out, Failure{Entity: e.Entity, Column: n.Attribute, Path: p.Path, Line: e.Line, Reason: p.Reason, Fix: p.Fix})
			}
			for _, c := range n.Columns {
				if c.Status == Irreversible {
					out = append(out, Failure{Entity: e.Entity, Column: n.Attribute + "." + c.Column, Path: orPath(c.Path, n.Path), Line: e.Line, Reason: c.Reason, Fix: c.Fix})
				}
			}
		}
	}
	if r.lineOf != nil {
		for i := range out {
			if l := r.lineOf(out[i].Path); l > 0 {
				out[i].Line = l
			}
		}
	}
	return out
}

func orPath(p, fallback string) string {
	if p != "" {
		return p
	}
	return fallback
}
