package design

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/patterns"
)

// Collection is a set of items the samples must show some of, besides
// each entity's first rows: an access pattern's result, an item
// collection an operator names (--sample-keys), or an index's entries.
// The first rows alone show none of them when they are further on
// (orders unshipped since 11008, customer 57's orders) or sparse (an
// index only some items are in).
type Collection struct {
	// Name says where the collection comes from, in messages.
	Name string
	// PK and SK name the key attributes it is keyed on (SK may be "").
	PK, SK string
	// Value is the partition key value it is the collection of ("" for
	// an index's entries).
	Value string
	holds func(item map[string]types.AttributeValue) bool
}

// Holds reports whether an item is in the collection.
func (c *Collection) Holds(item map[string]types.AttributeValue) bool { return c.holds(item) }

// PatternCollections are the results of the mapping's access patterns
// (their literal keys: a pattern carries no parameters). A pattern whose
// query cannot be built has none; New reports its error on the page.
func PatternCollections(p *mapping.Plan) []*Collection {
	var out []*Collection
	for _, ap := range p.Config.Patterns {
		m, err := patterns.Match(p, ap.Query)
		if err != nil {
			continue
		}
		out = append(out, &Collection{Name: "access pattern " + fmt.Sprintf("%q", ap.Name), PK: m.PK, SK: m.SK, Value: ap.Query.PK, holds: m.Holds})
	}
	return out
}

// IndexCollections are each secondary index's entries: the items that
// have every key attribute of the index, so that a view of a sparse
// index shows items that are in it.
func IndexCollections(p *mapping.Plan) []*Collection {
	var out []*Collection
	for _, ix := range p.Table.Indexes {
		c := &Collection{Name: "index " + ix.Name, PK: ix.PK.Name}
		keys := []string{ix.PK.Name}
		if ix.SK != nil {
			c.SK = ix.SK.Name
			keys = append(keys, ix.SK.Name)
		}
		c.holds = func(item map[string]types.AttributeValue) bool {
			for _, k := range keys {
				if item[k] == nil {
					return false
				}
			}
			return true
		}
		out = append(out, c)
	}
	return out
}

// SampleKeys reads --sample-keys values: each names one item collection,
// as ATTR=VALUE where ATTR is the partition key attribute of the table or
// of an index (GSI1PK=EMPLOYEE#2), or as a bare VALUE of the table's
// partition key (CUSTOMER#ALFKI). A value whose text before "=" is not a
// key attribute is a bare value as a whole.
func SampleKeys(p *mapping.Plan, values []string) ([]*Collection, error) {
	t := p.Table
	partition := map[string]*mapping.KeyAttr{t.PK.Name: &t.PK}
	sortOnly := map[string]bool{}
	if t.SK != nil {
		sortOnly[t.SK.Name] = true
	}
	for _, ix := range t.Indexes {
		partition[ix.PK.Name] = &ix.PK
		if ix.SK != nil {
			sortOnly[ix.SK.Name] = true
		}
	}
	var out []*Collection
	for _, v := range values {
		attr, val := t.PK.Name, v
		if a, rest, ok := strings.Cut(v, "="); ok {
			switch {
			case partition[a] != nil:
				attr, val = a, rest
			case sortOnly[a]:
				return nil, fmt.Errorf("--sample-keys %s: %s is a sort key, not the partition key of the table or of an index (%s)", v, a, strings.Join(partitionNames(t), ", "))
			}
		}
		if val == "" {
			return nil, fmt.Errorf("--sample-keys %q: no partition key value", v)
		}
		want, err := keyValue(*partition[attr], val)
		if err != nil {
			return nil, fmt.Errorf("--sample-keys %s: %w", v, err)
		}
		out = append(out, &Collection{Name: "--sample-keys " + v, PK: attr, Value: val, holds: func(item map[string]types.AttributeValue) bool {
			got := item[attr]
			return got != nil && mapping.KeyText(got) == mapping.KeyText(want) && mapping.CompareKey(got, want) == 0
		}})
	}
	return out, nil
}

func partitionNames(t *mapping.TableSchema) []string {
	names := []string{t.PK.Name}
	for _, ix := range t.Indexes {
		if !slices.Contains(names, ix.PK.Name) {
			names = append(names, ix.PK.Name)
		}
	}
	return names
}

// keyValue types a key value given as text.
func keyValue(k mapping.KeyAttr, v string) (types.AttributeValue, error) {
	if k.Type == mapping.TypeN {
		n, err := mapping.NormalizeNumber(v)
		if err != nil {
			return nil, fmt.Errorf("%s is a Number key: %w", k.Name, err)
		}
		return &types.AttributeValueMemberN{Value: n}, nil
	}
	return &types.AttributeValueMemberS{Value: v}, nil
}

// mayHold reports whether an entity's items can be in the collection,
// from its key templates alone: a template that starts with literal text
// the value does not start with never renders the value. It only saves
// reading entities that cannot contribute.
func (c *Collection) mayHold(ep *mapping.EntityPlan, t *mapping.TableSchema) bool {
	for _, it := range ep.Items {
		tmpl, written := attrTemplate(it, t, c.PK)
		if !written {
			continue
		}
		if c.Value == "" || tmpl == nil {
			return true
		}
		if lit, ok := tmpl.Literal(); ok {
			if lit == c.Value {
				return true
			}
			continue
		}
		if strings.HasPrefix(c.Value, tmpl.Prefix()) {
			return true
		}
	}
	return false
}

// attrTemplate is the template an item writes an attribute with (nil when
// it is written otherwise: a column, a constant), and whether the item
// writes it at all.
func attrTemplate(it *mapping.ItemPlan, t *mapping.TableSchema, name string) (*mapping.Template, bool) {
	switch {
	case name == t.PK.Name:
		return it.PK, true
	case t.SK != nil && name == t.SK.Name:
		return it.SK, it.SK != nil
	}
	for _, a := range it.Attributes() {
		if a.Name == name {
			return a.Template, true
		}
	}
	return nil, false
}

// rowsAtMost is how many rows of the entity can have items in the
// collection, when its key tells: 1 when the entity makes one item per
// row whose template of the collection's partition key attribute is its
// one primary-key column, as it is or zero-padded, between literal text,
// so that a value names one row; 0 (no bound) otherwise. It lets a read
// for customer 57's own item stop at customer 57.
func (c *Collection) rowsAtMost(ep *mapping.EntityPlan, t *mapping.TableSchema) int {
	if c.Value == "" || len(ep.Items) != 1 || len(ep.KeyColumns) != 1 {
		return 0
	}
	tmpl, _ := attrTemplate(ep.Items[0], t, c.PK)
	if tmpl == nil {
		return 0
	}
	exprs := tmpl.Exprs()
	if len(exprs) != 1 || exprs[0].Ref != (mapping.ColumnName{Name: ep.KeyColumns[0]}) {
		return 0
	}
	for _, tr := range exprs[0].Transforms {
		if tr.Name != "pad" {
			return 0 // lower, upper, shard… may give two rows one key
		}
	}
	return 1
}
