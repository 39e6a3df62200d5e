package mapping

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/ddbjson"
	"github.com/dynafold/dynafold/value"
)

// Item is one DynamoDB item built from a source row.
type Item struct {
	// Attrs and Body are the item's attributes in one of two forms, never
	// both: a build with an Arena (the migrate hot path) leaves only Body,
	// the item encoded once as DynamoDB JSON (package ddbjson), the form
	// BatchWriteItem sends; other builds, and deletes, leave only Attrs,
	// which a writer encodes itself. Attributes reads either form.
	Attrs map[string]types.AttributeValue
	Body  []byte
	// Key is the item's primary key as text: partition key, NUL, sort key
	// (numbers in canonical form, binary as raw bytes). It identifies the
	// item for duplicate detection and for interleaving writes.
	Key string
	// PKLen is the length of the partition-key part of Key.
	PKLen int
	// Size is the item's size by DynamoDB's rules.
	Size int
	// Entity, Type and Part say where the item came from: Part numbers
	// the items one row produced, in order (split parts included).
	Entity *EntityPlan
	Type   string
	Part   int
	// SplitParts, on the head of a split aggregate (the item that keeps
	// the key and carries the part count), is how many parts it has; they
	// are the SplitParts items just before it in the row's items, so that
	// in build order the parts come first and the head last. SplitPart
	// numbers a part, from 1; it is 0 on every other item.
	SplitParts int
	SplitPart  int
	// Origin is set by the pipeline to route the write acknowledgement back
	// to the source row; mapping never reads it.
	Origin any
	// Delete makes the write a DeleteRequest for the item's key: Attrs then
	// holds only the key attributes (live sync removes items a row no
	// longer produces).
	Delete bool
	// OutOf names the global indexes the item is not in although its
	// entity's index: entry names them, for plan to report: those it has
	// only half the key of (one key template was NULL or empty; the half
	// it had was left off unless the table's key or another index needs
	// it), and those marked sparse: true that a NULL left it out of, on
	// purpose. One slice for both keeps Item as small as it was: every
	// item of a run is one, and nearly all have none.
	OutOf []IndexOut
}

// IndexOut is a global index an item is not in.
type IndexOut struct {
	Index string
	// Sparse: the index is marked sparse: true, and the item is left out
	// on purpose; otherwise the item had half its key.
	Sparse bool
}

// HalfKeys names the indexes the item has only half the key of.
func (it *Item) HalfKeys() []string { return it.outOf(false) }

// SparseOut names the indexes marked sparse: true the item is left out of.
func (it *Item) SparseOut() []string { return it.outOf(true) }

func (it *Item) outOf(sparse bool) []string {
	var names []string
	for _, o := range it.OutOf {
		if o.Sparse == sparse {
			names = append(names, o.Index)
		}
	}
	return names
}

// Attributes returns the item's attributes: Attrs, or Body decoded (a new
// map each call, for paths off the hot path: comparisons with the table,
// fakes in tests).
func (it *Item) Attributes() map[string]types.AttributeValue {
	if it.Attrs != nil || it.Body == nil {
		return it.Attrs
	}
	attrs, err := ddbjson.Decode(it.Body)
	if err != nil {
		// Body is ddbjson's encoding of a built item: not reading it
		// back is a bug, not bad data.
		panic(fmt.Sprintf("decoding item %q: %v", it.Key, err))
	}
	return attrs
}

// PartitionKey returns the partition-key part of Key.
func (it *Item) PartitionKey() string { return it.Key[:it.PKLen] }

// Build turns one row into its items, appended to dst. A row that cannot
// become valid items returns a *RowError and no items.
func (e *EntityPlan) Build(row value.Row, dst []Item) ([]Item, error) {
	return e.BuildArena(row, dst, nil)
}

// BuildArena is Build taking attribute values and strings from an arena
// (nil: ordinary allocations), for the migrate hot path.
func (e *EntityPlan) BuildArena(row value.Row, dst []Item, a *Arena) ([]Item, error) {
	return e.build(row, nil, dst, a, dynamoLimits)
}

// BuildNested is BuildArena for an entity with nested child tables: nested
// holds, for each of Nests() in order, the row's child rows in order.
func (e *EntityPlan) BuildNested(row value.Row, nested [][]value.Row, dst []Item, a *Arena) ([]Item, error) {
	return e.build(row, nested, dst, a, dynamoLimits)
}

// limits are the size rules a build enforces. split is the most a part of
// a split aggregate may be, and is never lifted: an unchecked build splits
// as a checked one does, and lax lets it put an element too large for any
// part into a part of its own instead of failing, so that it can be
// measured.
type limits struct {
	item, pk, sk int
	split        int
	lax          bool
}

// dynamoLimits are DynamoDB's; BuildUnchecked lifts them.
var dynamoLimits = limits{item: MaxItemBytes, pk: MaxPartitionKeyBytes, sk: MaxSortKeyBytes, split: SplitItemBytes}

func (e *EntityPlan) build(row value.Row, nested [][]value.Row, dst []Item, a *Arena, lim limits) ([]Item, error) {
	start := len(dst)
	for i, it := range e.Items {
		item, err := it.build(e, row, a, lim)
		if err != nil {
			return dst[:start], err
		}
		if len(e.nests) > 0 {
			dst, err = e.addNested(row, nested, i, item, dst, a, lim)
			if err != nil {
				return dst[:start], err
			}
			continue
		}
		dst = append(dst, item)
	}
	for i := start; i < len(dst); i++ {
		dst[i].Part = i - start
		if a != nil && dst[i].Body == nil {
			// Nested items are built as Attrs, added to, then encoded.
			dst[i].Body, dst[i].Attrs = a.encode(dst[i].Attrs), nil
		}
	}
	return dst, nil
}

// build makes one item of row. On the migrate hot path (an arena, and no
// nested rows that would add to the item afterwards) the item keeps only
// Body, its encoding; otherwise it keeps Attrs (see Item).
func (it *ItemPlan) build(e *EntityPlan, row value.Row, a *Arena, lim limits) (Item, error) {
	tbl := e.table
	encode := a != nil && len(e.nests) == 0
	n := len(it.attrs) + 2
	if it.typeAV != nil {
		n++
	}
	if it.ttl != nil {
		n++
	}
	attrs := a.attrSet(n)

	// Both key texts are rendered into one buffer and become one string,
	// the item's Key; the key attributes are slices of it.
	buf := a.buffer()
	pk, buf, err := keyInto(buf, it.PK, row, tbl.PK.Type, lim.pk)
	if err != nil {
		a.keep(buf)
		return Item{}, e.rowError(row, tbl.PK.Name, err)
	}
	pkLen := len(buf)
	var sk types.AttributeValue
	if it.SK != nil {
		buf = append(buf, 0)
		sk, buf, err = keyInto(buf, it.SK, row, tbl.SK.Type, lim.sk)
		if err != nil {
			a.keep(buf)
			return Item{}, e.rowError(row, tbl.SK.Name, err)
		}
	}
	key := a.String(buf)
	a.keep(buf)
	if pk == nil {
		pk = a.S(key[:pkLen])
	}
	attrs = append(attrs, namedValue{tbl.PK.Name, e.names.pk, pk})
	if it.SK != nil {
		if sk == nil {
			sk = a.S(key[pkLen+1:])
		}
		attrs = append(attrs, namedValue{tbl.SK.Name, e.names.sk, sk})
	}

	for _, at := range it.attrs {
		av, err := at.eval(row, a, lim)
		if err != nil {
			return Item{}, e.rowError(row, at.name, err)
		}
		if av != nil {
			attrs = append(attrs, namedValue{at.name, at.json, av})
		}
	}
	if it.typeAV != nil {
		attrs = append(attrs, namedValue{e.typeAttr, e.names.typ, it.typeAV})
	}
	if it.ttl != nil {
		av, err := it.ttl.eval(row)
		if err != nil {
			return Item{}, e.rowError(row, e.ttlAttr, err)
		}
		if av != nil {
			attrs = append(attrs, namedValue{e.ttlAttr, e.names.ttl, av})
		}
	}
	var outOf []IndexOut
	for _, sp := range it.sparse {
		for _, k := range sp.keys {
			if !attrs.has(k) {
				outOf = append(outOf, IndexOut{Index: sp.index, Sparse: true})
				break
			}
		}
	}
	for _, h := range it.halves {
		hasPK, hasSK := attrs.has(h.pk), attrs.has(h.sk)
		if hasPK == hasSK {
			continue
		}
		if !h.sparse {
			outOf = append(outOf, IndexOut{Index: h.index})
		}
		if hasPK && h.dropPK {
			attrs = attrs.without(h.pk)
		}
		if hasSK && h.dropSK {
			attrs = attrs.without(h.sk)
		}
	}
	size := attrs.size()
	if size > lim.item {
		// The size alone does not say which column to fix on a wide row:
		// name the largest attribute.
		name, n := attrs.largest()
		return Item{}, e.rowError(row, "", fmt.Errorf("item is %d bytes (largest attribute %s, %d bytes); DynamoDB items are at most %d bytes (400 KB, names included)", size, name, n, MaxItemBytes))
	}
	item := Item{Key: key, PKLen: pkLen, Size: size, Entity: e, Type: it.Type, OutOf: outOf}
	if encode {
		item.Body = a.encodeSet(attrs)
	} else {
		item.Attrs = attrs.toMap()
	}
	a.keepSet(attrs)
	return item, nil
}

// Sentinels that let an index key be left out (the sparse rule) where a
// table key would make the row an error.
var (
	errNullKey  = errors.New("is NULL")
	errEmptyKey = errors.New("DynamoDB keys cannot be empty")
)

// keyInto renders a table key onto buf and checks DynamoDB's key rules. For
// a String key it returns a nil value: the caller makes it from the final
// key string. Number and Binary keys are converted here and their text is
// appended.
func keyInto(buf []byte, t *Template, row value.Row, typ AttrType, limit int) (types.AttributeValue, []byte, error) {
	if typ != TypeS {
		av, text, err := keyValue(t, row, typ, limit)
		if err != nil {
			return nil, buf, err
		}
		return av, append(buf, text...), nil
	}
	start := len(buf)
	buf, ok, err := t.appendTo(buf, row)
	if err != nil {
		return nil, buf, err
	}
	if !ok {
		return nil, buf, nullKeyError(t)
	}
	if err := checkStringKey(buf[start:], limit); err != nil {
		return nil, buf, err
	}
	return nil, buf, nil
}

func nullKeyError(t *Template) error {
	if e, single := t.Single(); single {
		return fmt.Errorf("%w: column %s has no value", errNullKey, e.Ref)
	}
	return fmt.Errorf("%w: template %q references a NULL column", errNullKey, t.src)
}

func checkStringKey(b []byte, limit int) error {
	switch {
	case len(b) == 0:
		return fmt.Errorf("key is an empty string; %w", errEmptyKey)
	case !utf8.Valid(b):
		return fmt.Errorf("key %s is not valid UTF-8", quoteValue(string(b)))
	case len(b) > limit:
		return fmt.Errorf("key is %d bytes; the limit is %d", len(b), limit)
	}
	return nil
}

// keyValue evaluates a key template as a Number or Binary key, or as a
// String key outside the hot path.
func keyValue(t *Template, row value.Row, typ AttrType, limit int) (types.AttributeValue, string, error) {
	var v value.Value
	if e, single := t.Single(); single {
		ev, ok, err := e.Eval(row)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			return nil, "", nullKeyError(t)
		}
		v = ev
	} else {
		s, ok, err := t.Render(row)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			return nil, "", nullKeyError(t)
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
			b = v.Bytes()
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
	if err := checkStringKey([]byte(s), limit); err != nil {
		return nil, "", err
	}
	return &types.AttributeValueMemberS{Value: s}, s, nil
}

// eval computes an attribute; nil means "leave it out" (NULL, an empty set,
// a false when-condition, or an empty index key).
func (at *attrPlan) eval(row value.Row, a *Arena, lim limits) (types.AttributeValue, error) {
	if at.constant != nil {
		return at.constant, nil
	}
	if at.when != nil && !at.when.holds(row) {
		return nil, nil
	}
	if at.keyType != "" {
		keyLimit := at.keyLimit
		if lim != dynamoLimits {
			keyLimit = max(lim.pk, lim.sk)
		}
		return at.indexKey(row, a, keyLimit)
	}
	var v value.Value
	switch {
	case at.col >= 0:
		v = row[at.col]
		if v.IsNull() {
			return nil, nil
		}
		if at.setCol {
			v = setMembers(v)
		}
	default:
		if e, single := at.tmpl.Single(); single {
			ev, ok, err := e.Eval(row)
			if err != nil || !ok {
				return nil, err
			}
			v = ev
		} else {
			buf, ok, err := at.tmpl.appendTo(a.buffer(), row)
			s := a.String(buf)
			a.keep(buf)
			if err != nil || !ok {
				return nil, err
			}
			v = value.StringValue(s)
		}
	}
	return convertArena(a, v, at.typ)
}

// indexKey computes an attribute that keys a secondary index: NULL or
// empty leaves the item out of the index (the sparse rule).
func (at *attrPlan) indexKey(row value.Row, a *Arena, keyLimit int) (types.AttributeValue, error) {
	if at.keyType != TypeS {
		av, _, err := keyValue(at.tmpl, row, at.keyType, keyLimit)
		if errors.Is(err, errNullKey) || errors.Is(err, errEmptyKey) {
			return nil, nil
		}
		return av, err
	}
	buf, ok, err := at.tmpl.appendTo(a.buffer(), row)
	defer a.keep(buf)
	if err != nil || !ok {
		return nil, err
	}
	if len(buf) == 0 {
		return nil, nil
	}
	if err := checkStringKey(buf, keyLimit); err != nil {
		return nil, err
	}
	return a.S(a.String(buf)), nil
}

// convertArena is Convert with the hot cases (a string as S, an integer as
// N) taken from the arena.
func convertArena(a *Arena, v value.Value, t AttrType) (types.AttributeValue, error) {
	switch {
	case v.Kind == value.String && (t == TypeAuto || t == TypeS):
		if !utf8.ValidString(v.S) {
			return nil, fmt.Errorf("invalid UTF-8 in string value %s", quoteValue(v.S))
		}
		return a.S(v.S), nil
	case v.Kind == value.Int && (t == TypeAuto || t == TypeN):
		buf := strconv.AppendInt(a.buffer(), v.I, 10)
		s := a.String(buf)
		a.keep(buf)
		return a.N(s), nil
	}
	av, err := Convert(v, t)
	if errors.Is(err, errOmit) {
		return nil, nil
	}
	return av, err
}

func (t *ttlPlan) eval(row value.Row) (types.AttributeValue, error) {
	v := row[t.col]
	var secs int64
	switch v.Kind {
	case value.Null:
		return nil, nil
	case value.Timestamp, value.Date:
		secs = v.Time().Unix()
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

// setMembers turns a MySQL SET value ("a,b", "" for the empty set) into the
// list of its members. Members cannot contain commas (MySQL forbids it).
func setMembers(v value.Value) value.Value {
	if v.Kind != value.String {
		return v
	}
	members := []value.Value{}
	if v.S != "" {
		for _, m := range strings.Split(v.S, ",") {
			members = append(members, value.StringValue(m))
		}
	}
	return value.ListValue(members)
}
