package mapping

import (
	"fmt"
	"regexp"
	"strings"
)

// KeyAttr is a key attribute of the table or an index.
type KeyAttr struct {
	Name string
	// Type is S, N or B.
	Type AttrType
}

// Index is a declared secondary index.
type Index struct {
	Name       string
	Global     bool
	PK         KeyAttr // for a local index, the table's partition key
	SK         *KeyAttr
	Projection string // ALL, KEYS_ONLY or INCLUDE
	Include    []string
	Capacity   *CapacitySpec
	// KeepHalfKey: an item with one of the index's key attributes and not
	// the other keeps it (half_key: keep).
	KeepHalfKey bool
}

// TableSchema is the DynamoDB table the mapping writes: what `table create`
// creates and what `migrate` checks before its first write.
type TableSchema struct {
	Name          string
	PK            KeyAttr
	SK            *KeyAttr
	Indexes       []*Index
	Billing       string // PAY_PER_REQUEST or PROVISIONED
	Capacity      *CapacitySpec
	TTLAttribute  string
	TypeAttribute string
	// StreamViewType is the table's DynamoDB Streams view type
	// (NEW_AND_OLD_IMAGES, NEW_IMAGE, OLD_IMAGE or KEYS_ONLY), or "" for
	// no stream.
	StreamViewType string
}

// streamViewType returns the DynamoDB Streams view type a target.stream
// value names (new_and_old_images, new_image, old_image, keys_only, in
// either case), or "".
func streamViewType(name string) string {
	switch v := strings.ToUpper(name); v {
	case "NEW_AND_OLD_IMAGES", "NEW_IMAGE", "OLD_IMAGE", "KEYS_ONLY":
		return v
	}
	return ""
}

// Index returns the named index, or nil.
func (t *TableSchema) Index(name string) *Index {
	for _, ix := range t.Indexes {
		if ix.Name == name {
			return ix
		}
	}
	return nil
}

// KeyAttrType returns the declared type of a key attribute (table or any
// index) and whether name is one.
func (t *TableSchema) KeyAttrType(name string) (AttrType, bool) {
	if name == t.PK.Name {
		return t.PK.Type, true
	}
	if t.SK != nil && name == t.SK.Name {
		return t.SK.Type, true
	}
	for _, ix := range t.Indexes {
		if ix.PK.Name == name {
			return ix.PK.Type, true
		}
		if ix.SK != nil && ix.SK.Name == name {
			return ix.SK.Type, true
		}
	}
	return "", false
}

// DynamoDB naming rules for tables and indexes: 3 to 255 of a-z A-Z 0-9 _ - .
var tableNameRe = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// Service defaults that bound what a table may declare.
const (
	maxGSIs = 20 // default quota of global secondary indexes per table
	maxLSIs = 5  // local secondary indexes per table
)

// tableSchema validates target: and derives the table schema.
func tableSchema(t *TargetConfig, errs *Errors) *TableSchema {
	ts := &TableSchema{Name: t.Table, TTLAttribute: t.TTL, TypeAttribute: t.TypeAttribute}
	switch {
	case t.Table == "":
		errs.add("target.table", "missing table name (or pass --table)")
	case !tableNameRe.MatchString(t.Table):
		errs.add("target.table", "%q is not a valid DynamoDB table name (3-255 characters of a-z, A-Z, 0-9, _ - .)", t.Table)
	}
	types := map[string]AttrType{}
	for _, e := range t.AttributeTypes {
		at, ok := parseAttrType(e.Value)
		if !ok || (at != TypeS && at != TypeN && at != TypeB) {
			errs.add("target.attribute_types."+e.Key, "key attributes are S, N or B, not %q", e.Value)
			continue
		}
		types[e.Key] = at
	}
	keyAttr := func(path, name string) KeyAttr {
		if len(name) > MaxKeyAttributeNameBytes {
			errs.add(path, "key attribute names are at most %d bytes", MaxKeyAttributeNameBytes)
		}
		at := types[name]
		if at == "" {
			at = TypeS
		}
		return KeyAttr{Name: name, Type: at}
	}
	if t.Key.PK == "" {
		errs.add("target.key.pk", "missing the partition key attribute name, e.g. pk: PK")
	}
	ts.PK = keyAttr("target.key.pk", t.Key.PK)
	if t.Key.SK != "" {
		if t.Key.SK == t.Key.PK {
			errs.add("target.key.sk", "the sort key must be a different attribute from the partition key")
		}
		sk := keyAttr("target.key.sk", t.Key.SK)
		ts.SK = &sk
	}
	switch strings.ToLower(t.Billing) {
	case "", "on_demand", "pay_per_request":
		ts.Billing = "PAY_PER_REQUEST"
		if t.Capacity != nil {
			errs.add("target.capacity", "capacity applies only with billing: provisioned")
		}
	case "provisioned":
		ts.Billing = "PROVISIONED"
		if t.Capacity == nil || t.Capacity.Read < 1 || t.Capacity.Write < 1 {
			errs.add("target.capacity", "billing: provisioned needs capacity: {read: N, write: N} with N >= 1")
		}
		ts.Capacity = t.Capacity
	default:
		errs.add("target.billing", "unknown billing mode %q (on_demand or provisioned)", t.Billing)
	}
	var gsis, lsis int
	for _, e := range t.Indexes {
		path := "target.indexes." + e.Key
		spec := e.Value
		if spec == nil {
			errs.add(path, "empty index definition")
			continue
		}
		if !tableNameRe.MatchString(e.Key) {
			errs.add(path, "%q is not a valid index name (3-255 characters of a-z, A-Z, 0-9, _ - .)", e.Key)
		}
		ix := &Index{Name: e.Key, Include: spec.Include, Capacity: spec.Capacity}
		switch strings.ToLower(spec.Type) {
		case "global", "gsi", "":
			ix.Global = true
			gsis++
			if spec.PK == "" {
				errs.add(path+".pk", "a global index needs a partition key attribute")
			}
			ix.PK = keyAttr(path+".pk", spec.PK)
		case "local", "lsi":
			lsis++
			if ts.SK == nil {
				errs.add(path, "a local index needs a table with a sort key")
			}
			if spec.PK != "" && spec.PK != t.Key.PK {
				errs.add(path+".pk", "a local index shares the table's partition key %q; omit pk", t.Key.PK)
			}
			if spec.SK == "" {
				errs.add(path+".sk", "a local index needs a sort key attribute")
			}
			ix.PK = ts.PK
		default:
			errs.add(path+".type", "unknown index type %q (global or local)", spec.Type)
			continue
		}
		if spec.SK != "" {
			sk := keyAttr(path+".sk", spec.SK)
			ix.SK = &sk
			if spec.SK == ix.PK.Name {
				errs.add(path+".sk", "the sort key must differ from the partition key")
			}
			if ts.SK != nil && !ix.Global && spec.SK == ts.SK.Name {
				errs.add(path+".sk", "a local index with the table's own sort key adds nothing")
			}
		}
		switch strings.ToLower(spec.Projection) {
		case "", "all":
			ix.Projection = "ALL"
		case "keys_only":
			ix.Projection = "KEYS_ONLY"
		case "include":
			ix.Projection = "INCLUDE"
			if len(spec.Include) == 0 {
				errs.add(path+".include", "projection: include needs the attribute names to include")
			}
		default:
			errs.add(path+".projection", "unknown projection %q (all, keys_only or include)", spec.Projection)
		}
		if ix.Projection != "INCLUDE" && len(spec.Include) > 0 {
			errs.add(path+".include", "include applies only with projection: include")
		}
		switch strings.ToLower(spec.HalfKey) {
		case "", "drop":
		case "keep":
			ix.KeepHalfKey = true
			if !ix.Global || ix.SK == nil {
				errs.add(path+".half_key", "half_key applies only to a global index with a sort key, whose two key attributes an item may have one of")
			}
		default:
			errs.add(path+".half_key", "unknown half_key %q (drop or keep)", spec.HalfKey)
		}
		if spec.Capacity != nil && (!ix.Global || ts.Billing != "PROVISIONED") {
			errs.add(path+".capacity", "capacity applies only to global indexes of a provisioned table")
		}
		ts.Indexes = append(ts.Indexes, ix)
	}
	if gsis > maxGSIs {
		errs.add("target.indexes", "%d global indexes; DynamoDB allows %d by default", gsis, maxGSIs)
	}
	if lsis > maxLSIs {
		errs.add("target.indexes", "%d local indexes; DynamoDB allows %d", lsis, maxLSIs)
	}
	for _, e := range t.AttributeTypes {
		if _, ok := ts.KeyAttrType(e.Key); !ok {
			errs.add("target.attribute_types."+e.Key, "%q is not a key attribute of the table or an index", e.Key)
		}
	}
	if t.TTL != "" {
		if _, isKey := ts.KeyAttrType(t.TTL); isKey {
			errs.add("target.ttl_attribute", "the TTL attribute cannot be a key attribute")
		}
	}
	if t.Stream != "" {
		ts.StreamViewType = streamViewType(t.Stream)
		if ts.StreamViewType == "" {
			errs.add("target.stream", "unknown stream view type %q (new_and_old_images, new_image, old_image or keys_only; failback needs new_and_old_images)", t.Stream)
		}
	}
	if t.TypeAttribute != "" {
		if _, isKey := ts.KeyAttrType(t.TypeAttribute); isKey {
			errs.add("target.type_attribute", "the type attribute cannot be a key attribute")
		}
	}
	return ts
}

// Describe renders the key schema in one line, for messages.
func (t *TableSchema) Describe() string {
	s := fmt.Sprintf("%s(%s)", t.PK.Name, t.PK.Type)
	if t.SK != nil {
		s += fmt.Sprintf(", %s(%s)", t.SK.Name, t.SK.Type)
	}
	return s
}
