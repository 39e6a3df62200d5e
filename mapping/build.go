package mapping

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/value"
)

// Item is one DynamoDB item built from a source row.
type Item struct {
	Attrs map[string]types.AttributeValue
	// Key is the item's primary key as text: partition key, NUL, sort key
	// (numbers in canonical form, binary as raw bytes). It identifies the
	// item for duplicate detection and for interleaving writes.
	Key string
	// PKLen is the length of the partition-key part of Key.
	PKLen int
	// Size is the item's size by DynamoDB's rules.
	Size int
	// Entity and Part say where the item came from.
	Entity *EntityPlan
	Part   int
	// Origin is set by the pipeline to route the write acknowledgement back
	// to the source row; mapping never reads it.
	Origin any
}

// PartitionKey returns the partition-key part of Key.
func (it *Item) PartitionKey() string { return it.Key[:it.PKLen] }

// Build turns one row into its items, appended to dst. A row that cannot
// become valid items returns a *RowError and no items.
func (e *EntityPlan) Build(row value.Row, dst []Item) ([]Item, error) {
	start := len(dst)
	for i, it := range e.Items {
		item, err := it.build(e, row)
		if err != nil {
			return dst[:start], err
		}
		item.Part = i
		dst = append(dst, item)
	}
	return dst, nil
}

func (it *ItemPlan) build(e *EntityPlan, row value.Row) (Item, error) {
	tbl := e.table
	n := len(it.attrs) + 2
	if it.typeAV != nil {
		n++
	}
	attrs := make(map[string]types.AttributeValue, n)
	pk, pkText, err := keyValue(it.PK, row, tbl.PK.Type, MaxPartitionKeyBytes, true)
	if err != nil {
		return Item{}, e.rowError(row, tbl.PK.Name, err)
	}
	attrs[tbl.PK.Name] = pk
	key := pkText
	if it.SK != nil {
		sk, skText, err := keyValue(it.SK, row, tbl.SK.Type, MaxSortKeyBytes, true)
		if err != nil {
			return Item{}, e.rowError(row, tbl.SK.Name, err)
		}
		attrs[tbl.SK.Name] = sk
		key = pkText + "\x00" + skText
	}
	for _, a := range it.attrs {
		av, err := a.eval(row)
		if err != nil {
			return Item{}, e.rowError(row, a.name, err)
		}
		if av != nil {
			attrs[a.name] = av
		}
	}
	if it.typeAV != nil {
		attrs[e.typeAttr] = it.typeAV
	}
	if it.ttl != nil {
		av, err := it.ttl.eval(row)
		if err != nil {
			return Item{}, e.rowError(row, e.ttlAttr, err)
		}
		if av != nil {
			attrs[e.ttlAttr] = av
		}
	}
	size := ItemSize(attrs)
	if size > MaxItemBytes {
		return Item{}, e.rowError(row, "", fmt.Errorf("item is %d bytes; DynamoDB items are at most %d bytes (400 KB, names included)", size, MaxItemBytes))
	}
	return Item{Attrs: attrs, Key: key, PKLen: len(pkText), Size: size, Entity: e}, nil
}

// Sentinels that let an index key be left out (the sparse rule) where a
// table key would make the row an error.
var (
	errNullKey  = errors.New("is NULL")
	errEmptyKey = errors.New("DynamoDB keys cannot be empty")
)

// keyValue renders a key template as an attribute value of the key type,
// enforcing DynamoDB's key rules. table is true for the table's own key,
// where NULL is an error rather than a reason to omit.
func keyValue(t *Template, row value.Row, typ AttrType, limit int, table bool) (types.AttributeValue, string, error) {
	var v value.Value
	if e, single := t.Single(); single {
		ev, ok, err := e.Eval(row)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			return nil, "", fmt.Errorf("%w: column %s has no value", errNullKey, e.Ref)
		}
		v = ev
	} else {
		s, ok, err := t.Render(row)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			return nil, "", fmt.Errorf("%w: template %q references a NULL column", errNullKey, t.src)
		}
		v = value.StringValue(s)
	}
	switch typ {
	case TypeN:
		n, err := toNumber(v)
		if err != nil {
			return nil, "", fmt.Errorf("numeric key: %w", err)
		}
		if len(n) > limit {
			return nil, "", fmt.Errorf("key is %d bytes; the limit is %d", len(n), limit)
		}
		return &types.AttributeValueMemberN{Value: n}, n, nil
	case TypeB:
		var b []byte
		switch v.Kind {
		case value.Bytes:
			b = v.B
		default:
			b = []byte(v.Text())
		}
		if len(b) == 0 {
			return nil, "", fmt.Errorf("binary key is empty; %w", errEmptyKey)
		}
		if len(b) > limit {
			return nil, "", fmt.Errorf("key is %d bytes; the limit is %d", len(b), limit)
		}
		return &types.AttributeValueMemberB{Value: b}, string(b), nil
	}
	s := v.Text()
	if s == "" {
		return nil, "", fmt.Errorf("key is an empty string; %w", errEmptyKey)
	}
	if !utf8.ValidString(s) {
		return nil, "", fmt.Errorf("key %q is not valid UTF-8", s)
	}
	if len(s) > limit {
		return nil, "", fmt.Errorf("key is %d bytes; the limit is %d", len(s), limit)
	}
	return &types.AttributeValueMemberS{Value: s}, s, nil
}

// eval computes an attribute; nil means "leave it out" (NULL, an empty set,
// a false when-condition, or an empty index key).
func (a *attrPlan) eval(row value.Row) (types.AttributeValue, error) {
	if a.constant != nil {
		return a.constant, nil
	}
	if a.when != nil && !a.when.holds(row) {
		return nil, nil
	}
	if a.keyType != "" {
		av, _, err := keyValue(a.source(), row, a.keyType, a.keyLimit, false)
		if errors.Is(err, errNullKey) || errors.Is(err, errEmptyKey) {
			return nil, nil // sparse: the item stays out of the index
		}
		return av, err
	}
	var v value.Value
	if a.col >= 0 {
		v = row[a.col]
		if v.IsNull() {
			return nil, nil
		}
	} else if e, single := a.tmpl.Single(); single {
		ev, ok, err := e.Eval(row)
		if err != nil || !ok {
			return nil, err
		}
		v = ev
	} else {
		s, ok, err := a.tmpl.Render(row)
		if err != nil || !ok {
			return nil, err
		}
		v = value.StringValue(s)
	}
	av, err := Convert(v, a.typ)
	if errors.Is(err, errOmit) {
		return nil, nil
	}
	return av, err
}

// source returns the attribute as a template, wrapping a plain column.
func (a *attrPlan) source() *Template {
	if a.tmpl != nil {
		return a.tmpl
	}
	return &Template{parts: []tpart{{expr: &Expr{col: a.col}}}}
}

func (t *ttlPlan) eval(row value.Row) (types.AttributeValue, error) {
	v := row[t.col]
	var secs int64
	switch v.Kind {
	case value.Null:
		return nil, nil
	case value.Timestamp, value.Date:
		secs = v.T.Unix()
	case value.Int:
		secs = v.I
	default:
		n, err := toNumber(v)
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return nil, err
		}
		secs = int64(f)
	}
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(secs+t.offset, 10)}, nil
}

// SourceKey returns the row's primary-key columns and values.
func (e *EntityPlan) SourceKey(row value.Row) []KeyPart {
	out := make([]KeyPart, len(e.KeyColumns))
	for i, c := range e.KeyColumns {
		out[i] = KeyPart{Column: c, Value: row[i]}
	}
	return out
}

// RowValues maps column names to the row's values, for reject files.
func (e *EntityPlan) RowValues(row value.Row) map[string]value.Value {
	out := make(map[string]value.Value, len(row))
	for i, v := range row {
		if i < len(e.columns) {
			out[e.columns[i]] = v
		}
	}
	return out
}

func (e *EntityPlan) rowError(row value.Row, attr string, err error) *RowError {
	return &RowError{Entity: e.Name, SourceKey: e.SourceKey(row), Attribute: attr, Reason: err.Error(), Row: e.RowValues(row)}
}
