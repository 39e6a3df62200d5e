package ddbnoop

import (
	"fmt"
	"hash/fnv"
	"sort"
	"sync"
	"time"
)

// Wire shapes of the control-plane operations. Field names are DynamoDB's;
// encoding/json is fine here because these calls are rare.
type (
	keySchemaElement struct {
		AttributeName string
		KeyType       string
	}
	attributeDefinition struct {
		AttributeName string
		AttributeType string
	}
	projection struct {
		ProjectionType   string   `json:",omitempty"`
		NonKeyAttributes []string `json:",omitempty"`
	}
	throughput struct {
		ReadCapacityUnits  int64
		WriteCapacityUnits int64
	}
	indexInput struct {
		IndexName             string
		KeySchema             []keySchemaElement
		Projection            projection
		ProvisionedThroughput *throughput
	}
	createTableInput struct {
		TableName              string
		KeySchema              []keySchemaElement
		AttributeDefinitions   []attributeDefinition
		GlobalSecondaryIndexes []indexInput
		LocalSecondaryIndexes  []indexInput
		BillingMode            string
		ProvisionedThroughput  *throughput
	}
	throughputDescription struct {
		ReadCapacityUnits      int64
		WriteCapacityUnits     int64
		NumberOfDecreasesToday int64
	}
	indexDescription struct {
		IndexName             string
		KeySchema             []keySchemaElement
		Projection            projection
		IndexStatus           string                 `json:",omitempty"` // GSIs only
		ProvisionedThroughput *throughputDescription `json:",omitempty"` // GSIs only
		IndexSizeBytes        int64
		ItemCount             int64
		IndexArn              string
	}
	billingModeSummary struct {
		BillingMode string
	}
	tableDescription struct {
		TableName              string
		TableStatus            string
		TableArn               string
		TableId                string
		CreationDateTime       float64 // awsJson timestamps are epoch seconds
		KeySchema              []keySchemaElement
		AttributeDefinitions   []attributeDefinition
		GlobalSecondaryIndexes []indexDescription `json:",omitempty"`
		LocalSecondaryIndexes  []indexDescription `json:",omitempty"`
		BillingModeSummary     billingModeSummary
		ProvisionedThroughput  throughputDescription
		ItemCount              int64
		TableSizeBytes         int64
	}
)

// keyAttr is an attribute that is a key of the table or of one of its
// indexes, with its declared type.
type keyAttr struct {
	name string
	typ  avType
}

// index is a declared secondary index.
type index struct {
	input indexInput
	// need has one bit per table.keyAttrs entry this index's keys use; an
	// item is written to a GSI only if it carries all of them.
	need uint64
}

// table is a declared table. It is immutable once registered except for ttl,
// which is guarded by the registry's mutex.
type table struct {
	input   createTableInput
	created time.Time
	// keyAttrs lists the partition key, the sort key if any (hasSK), then
	// every other attribute used as an index key. Its order is the bit order
	// of index.need.
	keyAttrs []keyAttr
	hasSK    bool
	gsis     []index
	lsis     []index
	billing  string
	ttlAttr  string
	ttlOn    bool
}

// nPrimary is the number of primary key attributes (1 or 2).
func (t *table) nPrimary() int {
	if t.hasSK {
		return 2
	}
	return 1
}

// keyIndex returns name's position in keyAttrs, or -1. string(name) in a
// comparison does not allocate.
func (t *table) keyIndex(name []byte) int {
	for i := range t.keyAttrs {
		if t.keyAttrs[i].name == string(name) {
			return i
		}
	}
	return -1
}

// newTable validates a CreateTable request the way DynamoDB does, as far as
// this server cares, and builds the table.
func newTable(in createTableInput, now time.Time) (*table, *apiError) {
	if !validName(in.TableName) {
		return nil, validationError("TableName must be at least 3 characters long and at most 255 characters long, " +
			"and match [a-zA-Z0-9_.-]+")
	}
	if len(in.GlobalSecondaryIndexes) > 20 || len(in.LocalSecondaryIndexes) > 5 {
		return nil, validationError("One or more parameter values were invalid: too many secondary indexes")
	}
	types := make(map[string]avType, len(in.AttributeDefinitions))
	for _, d := range in.AttributeDefinitions {
		switch d.AttributeType {
		case "S":
			types[d.AttributeName] = avS
		case "N":
			types[d.AttributeName] = avN
		case "B":
			types[d.AttributeName] = avB
		default:
			return nil, validationError(fmt.Sprintf("Member must satisfy enum value set: [B, N, S]: %q", d.AttributeType))
		}
	}
	t := &table{input: in, created: now}
	addKey := func(name string) (int, *apiError) {
		for i, k := range t.keyAttrs {
			if k.name == name {
				return i, nil
			}
		}
		typ, ok := types[name]
		if !ok {
			return 0, validationError("One or more parameter values were invalid: " +
				"Some index key attributes are not defined in AttributeDefinitions. Keys: [" + name + "]")
		}
		if len(t.keyAttrs) == 64 {
			return 0, validationError("too many key attributes")
		}
		t.keyAttrs = append(t.keyAttrs, keyAttr{name: name, typ: typ})
		return len(t.keyAttrs) - 1, nil
	}
	hash, rng, err := splitKeySchema(in.KeySchema)
	if err != nil {
		return nil, err
	}
	if _, err := addKey(hash); err != nil {
		return nil, err
	}
	if rng != "" {
		t.hasSK = true
		if _, err := addKey(rng); err != nil {
			return nil, err
		}
	}
	for i, group := range [][]indexInput{in.GlobalSecondaryIndexes, in.LocalSecondaryIndexes} {
		for _, ix := range group {
			h, r, err := splitKeySchema(ix.KeySchema)
			if err != nil {
				return nil, err
			}
			if !validName(ix.IndexName) {
				return nil, validationError("IndexName must be at least 3 characters long and at most 255 characters long, " +
					"and match [a-zA-Z0-9_.-]+")
			}
			if i == 1 && h != hash {
				return nil, validationError("One or more parameter values were invalid: " +
					"Index KeySchema does not have the same leading hash key as table KeySchema for index: " + ix.IndexName)
			}
			var need uint64
			for _, name := range []string{h, r} {
				if name == "" {
					continue
				}
				k, err := addKey(name)
				if err != nil {
					return nil, err
				}
				need |= 1 << k
			}
			if i == 0 {
				t.gsis = append(t.gsis, index{input: ix, need: need})
			} else {
				t.lsis = append(t.lsis, index{input: ix, need: need})
			}
		}
	}
	t.billing = in.BillingMode
	if t.billing == "" {
		t.billing = "PAY_PER_REQUEST"
		if in.ProvisionedThroughput != nil {
			t.billing = "PROVISIONED"
		}
	}
	return t, nil
}

// validName applies DynamoDB's rule for table and index names. Besides
// matching DynamoDB, it lets the BatchWriteItem response writer copy names
// into JSON without escaping them.
func validName(n string) bool {
	if len(n) < 3 || len(n) > 255 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func splitKeySchema(ks []keySchemaElement) (hash, rng string, err *apiError) {
	for _, k := range ks {
		switch k.KeyType {
		case "HASH":
			if hash != "" {
				return "", "", validationError("Too many hash keys")
			}
			hash = k.AttributeName
		case "RANGE":
			if rng != "" {
				return "", "", validationError("Too many range keys")
			}
			rng = k.AttributeName
		default:
			return "", "", validationError("Invalid KeyType: " + k.KeyType)
		}
	}
	if hash == "" {
		return "", "", validationError("No Hash Key specified in schema. All Dynamo DB tables must have exactly one hash key")
	}
	return hash, rng, nil
}

// describe renders the table for DescribeTable, CreateTable and DeleteTable.
func (t *table) describe(status string) tableDescription {
	in := t.input
	arn := "arn:aws:dynamodb:us-east-1:000000000000:table/" + in.TableName
	d := tableDescription{
		TableName:            in.TableName,
		TableStatus:          status,
		TableArn:             arn,
		TableId:              fakeUUID(in.TableName),
		CreationDateTime:     float64(t.created.UnixMilli()) / 1000,
		KeySchema:            in.KeySchema,
		AttributeDefinitions: in.AttributeDefinitions,
		BillingModeSummary:   billingModeSummary{BillingMode: t.billing},
	}
	if in.ProvisionedThroughput != nil {
		d.ProvisionedThroughput.ReadCapacityUnits = in.ProvisionedThroughput.ReadCapacityUnits
		d.ProvisionedThroughput.WriteCapacityUnits = in.ProvisionedThroughput.WriteCapacityUnits
	}
	for _, ix := range t.gsis {
		pt := &throughputDescription{}
		if ix.input.ProvisionedThroughput != nil {
			pt.ReadCapacityUnits = ix.input.ProvisionedThroughput.ReadCapacityUnits
			pt.WriteCapacityUnits = ix.input.ProvisionedThroughput.WriteCapacityUnits
		}
		d.GlobalSecondaryIndexes = append(d.GlobalSecondaryIndexes, indexDescription{
			IndexName:             ix.input.IndexName,
			KeySchema:             ix.input.KeySchema,
			Projection:            ix.input.Projection,
			IndexStatus:           "ACTIVE",
			ProvisionedThroughput: pt,
			IndexArn:              arn + "/index/" + ix.input.IndexName,
		})
	}
	for _, ix := range t.lsis {
		d.LocalSecondaryIndexes = append(d.LocalSecondaryIndexes, indexDescription{
			IndexName:  ix.input.IndexName,
			KeySchema:  ix.input.KeySchema,
			Projection: ix.input.Projection,
			IndexArn:   arn + "/index/" + ix.input.IndexName,
		})
	}
	return d
}

// fakeUUID gives each table name a stable UUID-shaped TableId.
func fakeUUID(name string) string {
	h := fnv.New128a()
	h.Write([]byte(name))
	b := h.Sum(nil)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// registry holds the declared tables.
type registry struct {
	mu     sync.RWMutex
	tables map[string]*table
}

// lookup finds a table by its (raw) name; string(name) as a map key does not
// allocate.
func (r *registry) lookup(name []byte) *table {
	r.mu.RLock()
	t := r.tables[string(name)]
	r.mu.RUnlock()
	return t
}

func (r *registry) add(t *table) *apiError {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tables[t.input.TableName]; ok {
		return &apiError{Type: errTypeInUse, Message: "Table already exists: " + t.input.TableName}
	}
	r.tables[t.input.TableName] = t
	return nil
}

func (r *registry) remove(name string) *table {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tables[name]
	delete(r.tables, name)
	return t
}

func (r *registry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.tables))
	for n := range r.tables {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func tableNotFound(name string) *apiError {
	return notFoundError("Requested resource not found: Table: " + name + " not found")
}
