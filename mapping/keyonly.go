package mapping

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/value"
)

// Key-only reads, for the key sweep of incremental runs: the sweep needs
// only the table keys each row makes, so it reads only the columns those
// keys are rendered from and builds no attributes.

// KeysOnly returns a copy of the entity whose query selects only the
// columns its items' table keys (and its own source key) are rendered
// from, and that reads no nested rows; the other positions of the select
// list repeat the first key column, so that every row position the
// templates refer to stays where it was. ok is false when the item keys
// depend on more than the row: a nested attribute that overflows by
// splitting makes numbered part items, as many as its size requires.
func (e *EntityPlan) KeysOnly() (ep *EntityPlan, ok bool) {
	for _, np := range e.nests {
		if np.overflow == overflowSplit {
			return nil, false
		}
	}
	used := make([]bool, len(e.Query.Columns))
	for i := 0; i < len(e.KeyColumns) && i < len(used); i++ {
		used[i] = true
	}
	for _, it := range e.Items {
		for _, t := range []*Template{it.PK, it.SK} {
			if t == nil {
				continue
			}
			for _, x := range t.Exprs() {
				if x.col >= 0 && x.col < len(used) {
					used[x.col] = true
				}
			}
		}
	}
	cp := *e
	q := *e.Query
	q.Columns = append(q.Columns[:0:0], e.Query.Columns...)
	for i, u := range used {
		if !u && len(q.Columns) > 0 {
			q.Columns[i] = q.Columns[0]
		}
	}
	cp.Query = &q
	cp.nests = nil
	return &cp, true
}

// BuildKeys appends, for each item the row makes, an Item holding only the
// table's key attributes (and Key, PKLen, Entity, Type), rendered as Build
// renders them: a NULL or empty key, or a key over DynamoDB's length
// limits, is a *RowError. It is meant for plans from KeysOnly, whose rows
// hold only the key columns.
func (e *EntityPlan) BuildKeys(row value.Row, dst []Item) ([]Item, error) {
	tbl := e.table
	for _, it := range e.Items {
		pk, buf, err := keyInto(nil, it.PK, row, tbl.PK.Type, MaxPartitionKeyBytes)
		if err != nil {
			return dst, e.rowError(row, tbl.PK.Name, err)
		}
		pkLen := len(buf)
		var sk types.AttributeValue
		if it.SK != nil {
			buf = append(buf, 0)
			if sk, buf, err = keyInto(buf, it.SK, row, tbl.SK.Type, MaxSortKeyBytes); err != nil {
				return dst, e.rowError(row, tbl.SK.Name, err)
			}
		}
		key := string(buf)
		if pk == nil {
			pk = &types.AttributeValueMemberS{Value: key[:pkLen]}
		}
		attrs := map[string]types.AttributeValue{tbl.PK.Name: pk}
		if it.SK != nil {
			if sk == nil {
				sk = &types.AttributeValueMemberS{Value: key[pkLen+1:]}
			}
			attrs[tbl.SK.Name] = sk
		}
		dst = append(dst, Item{Attrs: attrs, Key: key, PKLen: pkLen, Entity: e, Type: it.Type})
	}
	return dst, nil
}

// Filtered reports whether the entity reads a subset of its table chosen
// by the mapping (a where: filter, or a query:). Its rows then say nothing
// about the items of the rows left out (another tenant's, say), so a sweep
// must not call those stale. The soft-delete filter does not count: a
// soft-deleted row's item is stale.
func (e *EntityPlan) Filtered() bool { return e.Query.SQL != "" || len(e.userWhere) > 0 }
