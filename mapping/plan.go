package mapping

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// Plan is a compiled mapping: the table to write and, per entity, what to
// read and how each row becomes items. A Plan is immutable and safe for
// concurrent use.
type Plan struct {
	Config   *Config
	Table    *TableSchema
	Entities []*EntityPlan
	// Vars are the bound variables in effect (file defaults plus --var).
	Vars map[string]string
	// Warnings are problems that do not stop a run.
	Warnings []*Error
	// Changes holds the change-tracking columns of `changes:`, by table.
	Changes map[source.TableRef]*ChangeColumns
}

// Entity returns the named entity plan, or nil.
func (p *Plan) Entity(name string) *EntityPlan {
	for _, e := range p.Entities {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// Policy is what happens to a row that cannot become an item.
type Policy string

// The error policies.
const (
	// PolicyFail stops the run at the first bad row (the default).
	PolicyFail Policy = "fail"
	// PolicySkip counts the row and goes on.
	PolicySkip Policy = "skip"
	// PolicyReject writes the row to the reject file and goes on.
	PolicyReject Policy = "reject"
)

// EntityPlan is one compiled entity.
type EntityPlan struct {
	Name string
	// Query is what the source reads for this entity.
	Query *source.Query
	// KeyColumns are the source primary-key columns (the first columns of
	// every row).
	KeyColumns []string
	Items      []*ItemPlan
	OnError    Policy
	// columns names each row position, for reject files and messages.
	columns  []string
	table    *TableSchema
	typeAttr string
	ttlAttr  string
	// names holds the JSON form ("name":) of the key, type and TTL
	// attribute names, encoded once (see attrSet).
	names entityNames
	nests []*NestPlan
	// deps are the tables the items are built from; userWhere is the
	// mapping's where: alone, without the soft-delete filter.
	deps      []Dependency
	userWhere []source.WherePart
}

// ItemPlan builds one item from a row.
type ItemPlan struct {
	Name  string // "" when the entity makes one item per row
	Type  string
	PK    *Template
	SK    *Template
	attrs []*attrPlan
	ttl   *ttlPlan
	// typeAV is the constant type attribute value.
	typeAV types.AttributeValue
	// halves are the global indexes this item may get half a key of.
	halves []halfKey
	// sparse are the indexes whose index: entry says sparse: true.
	sparse []sparseIndex
}

// sparseIndex is an index the item is left out of on purpose when it
// lacks one of keys, the index's key attributes other than the table's.
type sparseIndex struct {
	index string
	keys  []string
}

// halfKey is a global index's two key attributes, and whether each may be
// left off an item that has only it (it keys no other index and is not the
// table's key).
type halfKey struct {
	index          string
	pk, sk         string
	dropPK, dropSK bool
	// sparse: the index is sparse on purpose (sparse: true); an item with
	// half its key is counted as left out, not as a half key.
	sparse bool
}

// attrPlan computes one non-table-key attribute.
type attrPlan struct {
	name string
	// json is name as a JSON object key, "name": (see attrSet).
	json string
	// path is the mapping key path, for error messages.
	path string
	typ  AttrType
	// kind is the value kind of its column or template (value.Null when
	// compiled without the source schema), for AttrInfo.Type.
	kind value.Kind
	// keyType is set when the attribute is an index key: S, N or B.
	keyType  AttrType
	keyLimit int
	col      int // -1 unless read straight from a column
	tmpl     *Template
	constant types.AttributeValue
	when     *condPlan
	// setCol: the column is a MySQL SET ("a,b"), stored as SS or L of its
	// members.
	setCol bool
	// fromIndex: written by an index: template, not by attributes:.
	fromIndex bool
}

type condPlan struct {
	col     int
	equals  *string
	in      map[string]bool
	notNull bool
	isNull  bool
}

func (c *condPlan) holds(row value.Row) bool {
	v := row[c.col]
	if c.isNull || v.IsNull() {
		return c.isNull && v.IsNull()
	}
	if c.notNull {
		return true
	}
	if c.equals != nil {
		return v.Text() == *c.equals
	}
	return c.in[v.Text()]
}

type ttlPlan struct {
	col    int
	offset int64 // seconds
}

// ColumnNames returns the names of the row positions ("id",
// "server.portfolio_id", …).
func (e *EntityPlan) ColumnNames() []string { return e.columns }
