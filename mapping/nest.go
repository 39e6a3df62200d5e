package mapping

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// childAlias is the SQL alias of a nested child table in its query.
const childAlias = "_child"

// NestPlan folds a child table's rows into one attribute of the parent's
// item.
//
// The child rows are read by their own query: the parent relation (with
// its joins and filter, so children of filtered-out parents are never read)
// INNER JOINed to the child table, ordered by the parent's key and then the
// child's order columns. Both streams are then in the same order, the one
// the database gives the parent's key, and are merged row by row without
// per-parent queries or holding a child table in memory.
type NestPlan struct {
	// Name is the attribute the elements go into.
	Name string
	// Query reads the child rows; its first ParentKeyLen columns are the
	// parent's key.
	Query        *source.Query
	ParentKeyLen int
	item         int // index of the item carrying the attribute
	asMap        bool
	mapKey       int // child row position of the map key
	elems        []*attrPlan
	maxBytes     int
	overflow     string
	partsAttr    string
	partAttr     string
	columns      []string
}

// Overflow policies of a nested attribute past max_bytes.
const (
	overflowReject = "reject"
	overflowSplit  = "split"
	overflowGzip   = "gzip"
)

// partFormat is the sort-key suffix of the parts of a split item: fixed
// width so that parts sort in order under begins_with.
const partFormat = "#PART#%04d"

// maxParts is the most parts an item splits into: four digits keep the
// parts in order under begins_with.
const maxParts = 9999

// Nests returns the entity's nested attributes.
func (e *EntityPlan) Nests() []*NestPlan { return e.nests }

// compileNests compiles the entity's nest: entries.
func (c *entityCompiler) compileNests(ep *EntityPlan, parent *source.Query) {
	splits := map[int]string{}
	for _, ne := range c.spec.Nest {
		path := c.path + ".nest." + ne.Key
		spec := ne.Value
		if spec == nil || spec.From == "" {
			c.errs.add(path+".from", "missing the child table to nest")
			continue
		}
		np := &NestPlan{Name: ne.Key, maxBytes: spec.MaxBytes, overflow: spec.Overflow,
			partsAttr: spec.PartsAttribute, partAttr: spec.PartAttribute}
		if np.partsAttr == "" {
			np.partsAttr = "Parts"
		}
		if np.partAttr == "" {
			np.partAttr = "Part"
		}
		if np.overflow == "" {
			np.overflow = overflowReject
		}
		switch np.overflow {
		case overflowReject, overflowGzip:
		case overflowSplit:
			if c.plan.Table.SK == nil || c.plan.Table.SK.Type != TypeS {
				c.errs.add(path+".overflow", "split writes numbered items by sort key (…%s): the table needs a String sort key", fmt.Sprintf(partFormat, 1))
			}
		default:
			c.errs.add(path+".overflow", "unknown overflow %q (split, gzip or reject)", np.overflow)
		}
		if spec.MaxBytes < 0 || spec.MaxBytes > MaxItemBytes {
			c.errs.add(path+".max_bytes", "max_bytes must be between 1 and %d", MaxItemBytes)
		}
		if spec.Item != "" {
			np.item = -1
			for i, it := range ep.Items {
				if it.Name == spec.Item {
					np.item = i
				}
			}
			if np.item < 0 {
				c.errs.add(path+".item", "no item %q under items:", spec.Item)
				continue
			}
		}
		if np.overflow == overflowSplit {
			if prev, dup := splits[np.item]; dup {
				c.errs.add(path+".overflow", "only one nested attribute per item can split; %s already does", prev)
			}
			splits[np.item] = ne.Key
		}
		switch spec.As {
		case "", "list":
		case "map":
			np.asMap = true
			if spec.Key == "" {
				c.errs.add(path+".key", "as: map needs key: the child column whose value keys each element")
			}
		default:
			c.errs.add(path+".as", "unknown form %q (list or map)", spec.As)
		}
		if len(spec.Attributes) == 0 {
			c.errs.add(path+".attributes", "name the child columns each element holds, e.g. {s: second, o: output}")
		}
		q := c.nestQuery(path, np, spec, parent)
		if q == nil {
			continue
		}
		np.Query = q
		ep.nests = append(ep.nests, np)
	}
}

// nestQuery builds the child query and compiles the element attributes
// against the child table.
func (c *entityCompiler) nestQuery(path string, np *NestPlan, spec *NestSpec, parent *source.Query) *source.Query {
	child := c.lookup(path+".from", spec.From)
	if child == nil {
		return nil
	}
	cc := &entityCompiler{name: c.name, path: path, spec: c.spec, plan: c.plan, schema: c.schema, static: c.static,
		errs: c.errs, index: map[ColumnName]int{}, joins: map[string]*source.Table{}, base: child, defaultAlias: childAlias}
	q := &source.Query{Base: parent.Base, SQL: parent.SQL, Joins: append([]source.Join{}, parent.Joins...), Where: parent.Where}
	// The parent's key comes first in every child row.
	for i, k := range parent.Key {
		pc := parent.Columns[i]
		cc.cols = append(cc.cols, pc)
		cc.kinds = append(cc.kinds, pc.Kind)
		q.Key = append(q.Key, k)
		q.KeyAliases = append(q.KeyAliases, "")
		q.KeyKinds = append(q.KeyKinds, parent.KeyKinds[i])
	}
	np.ParentKeyLen = len(parent.Key)
	join := source.Join{Alias: childAlias, Table: child.Ref, Inner: true}
	paired := map[string]bool{}
	var childKey []string
	for _, on := range spec.On {
		if !c.static && child.Column(on.Key) == nil {
			c.errs.add(path+".on."+on.Key, "%s", c.unknown(child, on.Key))
			return nil
		}
		isKey := c.static // without the schema the parent's key is not known yet
		for _, k := range parent.Key {
			isKey = isKey || k == on.Value
		}
		if !isKey {
			c.errs.add(path+".on."+on.Key, "%q is not a primary-key column of %s; nested rows are matched on the parent's key (%s)", on.Value, c.name, strings.Join(parent.Key, ", "))
			return nil
		}
		paired[on.Value] = true
		childKey = append(childKey, on.Key)
		join.On = append(join.On, source.JoinOn{Column: on.Key, RefAlias: "", RefColumn: on.Value})
	}
	if !c.static && len(paired) != len(parent.Key) {
		c.errs.add(path+".on", "pair every primary-key column of %s (%s) with a child column", c.name, strings.Join(parent.Key, ", "))
		return nil
	}
	q.Joins = append(q.Joins, join)
	if ch := c.plan.Changes[child.Ref]; ch != nil && ch.Deleted != "" {
		q.Where = andWhere(q.Where, notDeleted(childAlias, ch.Deleted)...)
	}
	orderBy := spec.OrderBy
	if len(orderBy) == 0 && spec.Key != "" {
		orderBy = []string{spec.Key}
	}
	for i, o := range orderBy {
		pos, kind, ok := cc.column(fmt.Sprintf("%s.order_by[%d]", path, i), ColumnName{Name: o})
		if !ok {
			return nil
		}
		q.Key = append(q.Key, o)
		q.KeyAliases = append(q.KeyAliases, childAlias)
		q.KeyKinds = append(q.KeyKinds, kind)
		_ = pos
		childKey = append(childKey, o)
	}
	// Keyset paging needs the order to identify a child row.
	if !c.static && !child.IsUnique(childKey) {
		c.errs.add(path+".order_by", "the child's pairing columns and order_by (%s) must identify a row of %s (cover its primary key or a unique key)", strings.Join(childKey, ", "), child.Ref)
		return nil
	}
	if np.asMap {
		pos, _, ok := cc.column(path+".key", ColumnName{Name: spec.Key})
		if !ok {
			return nil
		}
		np.mapKey = pos
	}
	for _, ae := range spec.Attributes {
		a := cc.attribute(path+".attributes."+ae.Key, ae.Key, ae.Value)
		if a == nil {
			continue
		}
		a.keyType = "" // element attributes are never index keys
		np.elems = append(np.elems, a)
	}
	q.Columns = cc.cols
	for _, cr := range cc.cols {
		np.columns = append(np.columns, cr.String())
	}
	return q
}

// ChildColumnNames names the positions of a child row.
func (np *NestPlan) ChildColumnNames() []string { return np.columns }

func (np *NestPlan) element(ch value.Row, a *Arena) (types.AttributeValue, error) {
	m := make(map[string]types.AttributeValue, len(np.elems))
	for _, at := range np.elems {
		av, err := at.eval(ch, a, dynamoLimits)
		if err != nil {
			return nil, fmt.Errorf("nested %s.%s: %w", np.Name, at.name, err)
		}
		if av != nil {
			m[at.name] = av
		}
	}
	return &types.AttributeValueMemberM{Value: m}, nil
}
