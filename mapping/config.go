package mapping

// The types in this file mirror the mapping file one to one; the yaml tags
// are the file's vocabulary. Compile turns a Config into a Plan.

// Config is a whole mapping file.
type Config struct {
	Version  int                 `yaml:"version"`
	Source   SourceConfig        `yaml:"source"`
	Target   TargetConfig        `yaml:"target"`
	Vars     OrderedMap[string]  `yaml:"vars"`
	Entities OrderedMap[*Entity] `yaml:"entities"`
	Patterns []*AccessPattern    `yaml:"access_patterns"`
	Defaults *EntityDefaults     `yaml:"defaults"`
	Lint     *LintConfig         `yaml:"lint"`
	// Changes declares, per source table, the column that says when a row
	// last changed (and optionally a soft-delete column), for incremental
	// runs: table name → columns.
	Changes OrderedMap[*ChangeSpec] `yaml:"changes"`
}

// ChangeSpec is how incremental runs see a table's changes.
type ChangeSpec struct {
	// Column is a timestamp column set on every insert and update.
	Column string `yaml:"column"`
	// Deleted is an optional soft-delete column: a row where it is not
	// NULL is deleted, and makes no item.
	Deleted string `yaml:"deleted"`
}

// LintConfig acknowledges plan's findings the operator has judged.
type LintConfig struct {
	// Ignore lists check names (key.incomplete, index.partial_key, …):
	// their findings are reported as acknowledged notes, and do not stop
	// plan or migrate.
	Ignore []string `yaml:"ignore"`
}

// SourceConfig says where rows come from.
type SourceConfig struct {
	Driver string `yaml:"driver"`
	DSN    string `yaml:"dsn"`
	// Schema is the default schema (PostgreSQL) for unqualified tables.
	Schema string `yaml:"schema"`
}

// TargetConfig describes the DynamoDB table.
type TargetConfig struct {
	Table    string `yaml:"table"`
	Region   string `yaml:"region"`
	Endpoint string `yaml:"endpoint"`
	// Billing is on_demand (default) or provisioned.
	Billing  string        `yaml:"billing"`
	Capacity *CapacitySpec `yaml:"capacity"`
	Key      TableKeySpec  `yaml:"key"`
	// AttributeTypes gives the type (S, N or B) of key attributes of the
	// table and its indexes; unlisted key attributes are S.
	AttributeTypes OrderedMap[string]     `yaml:"attribute_types"`
	Indexes        OrderedMap[*IndexSpec] `yaml:"indexes"`
	// TypeAttribute, when set, is written on every item with the entity's
	// type name.
	TypeAttribute string `yaml:"type_attribute"`
	// TTL names the Number attribute that holds each item's expiry.
	TTL string `yaml:"ttl_attribute"`
	// Stream is the table's DynamoDB Streams view type: new_and_old_images
	// (what failback reads), new_image, old_image or keys_only; empty
	// means no stream. It changes nothing a run writes, so it is left out
	// of the fingerprint: enabling the stream at cutover keeps sync's
	// checkpoint.
	Stream string `yaml:"stream" json:"-"`
}

// CapacitySpec is provisioned throughput.
type CapacitySpec struct {
	Read  int64 `yaml:"read"`
	Write int64 `yaml:"write"`
}

// TableKeySpec names the table's key attributes.
type TableKeySpec struct {
	PK string `yaml:"pk"`
	SK string `yaml:"sk"`
}

// IndexSpec declares a GSI or LSI.
type IndexSpec struct {
	// Type is global or local.
	Type string `yaml:"type"`
	PK   string `yaml:"pk"`
	SK   string `yaml:"sk"`
	// Projection is all (default), keys_only or include.
	Projection string        `yaml:"projection"`
	Include    []string      `yaml:"include"`
	Capacity   *CapacitySpec `yaml:"capacity"`
	// HalfKey says what becomes of the one key attribute an item has when
	// the other is missing (it is not in the index either way): drop
	// (default) leaves it off the item when only this index's template
	// writes it; keep writes it, for readers that use it. omitempty keeps
	// fingerprints of mappings without it as they were.
	HalfKey string `yaml:"half_key" json:"half_key,omitempty"`
}

// EntityDefaults apply to every entity that does not set its own.
type EntityDefaults struct {
	OnError string `yaml:"on_error"`
}

// Entity maps one source table (or query) to one or more items per row.
type Entity struct {
	// From is the table, "schema.table" or "table".
	From string `yaml:"from"`
	// Query is a read-only SELECT used instead of a table.
	Query string `yaml:"query"`
	// PrimaryKey overrides the introspected primary key; required for Query.
	PrimaryKey []string `yaml:"primary_key"`
	// Join pre-joins ancestors: alias → table and column pairing.
	Join OrderedMap[*JoinSpec] `yaml:"join"`
	// Where filters rows: SQL over the entity's columns with ${var.NAME}
	// placeholders bound from --var or vars:.
	Where string `yaml:"where"`
	// Type is the value of the type attribute; default the entity's name.
	Type string `yaml:"type"`
	// Key holds the templates of the table's partition and sort key.
	Key KeyTemplates `yaml:"key"`
	// Index holds the key templates of secondary indexes.
	Index OrderedMap[*IndexTemplates] `yaml:"index"`
	// Attributes are the non-key attributes.
	Attributes OrderedMap[*AttributeSpec] `yaml:"attributes"`
	// TTL computes the table's TTL attribute.
	TTL *TTLSpec `yaml:"ttl"`
	// Items splits one row into several items of one collection (vertical
	// partitioning); each inherits Key, Index and Attributes.
	Items OrderedMap[*ItemSpec] `yaml:"items"`
	// OnError is fail (default), skip or reject.
	OnError string `yaml:"on_error"`
	// Nest folds child tables' rows into attributes of the item: attribute
	// name → child table.
	Nest OrderedMap[*NestSpec] `yaml:"nest"`
}

// NestSpec folds the rows of a child table into one attribute of the
// parent's item: a list ordered by columns, or a map keyed by a column.
type NestSpec struct {
	From string `yaml:"from"`
	// On pairs each child column with the parent's primary-key column it
	// refers to: {race_id: race_id, racer_id: racer_id}.
	On OrderedMap[string] `yaml:"on"`
	// OrderBy orders the elements; with On it must identify a child row.
	OrderBy []string `yaml:"order_by"`
	// As is list (default) or map.
	As string `yaml:"as"`
	// Key is the child column whose value keys the map (as: map).
	Key string `yaml:"key"`
	// Attributes of each element, which is a map.
	Attributes OrderedMap[*AttributeSpec] `yaml:"attributes"`
	// Item names the item of items: that carries the attribute (default:
	// the first).
	Item string `yaml:"item"`
	// MaxBytes bounds the attribute's size; past it Overflow decides.
	MaxBytes int `yaml:"max_bytes"`
	// Overflow is split, gzip or reject (default).
	Overflow string `yaml:"overflow"`
	// PartsAttribute names the attribute that carries the part count on a
	// split item (default Parts) and PartAttribute the part number on each
	// of its parts (default Part).
	PartsAttribute string `yaml:"parts_attribute"`
	PartAttribute  string `yaml:"part_attribute"`
}

// JoinSpec pre-joins one ancestor table.
type JoinSpec struct {
	From string `yaml:"from"`
	// On maps a column of the joined table to a column of the entity
	// ("server_id") or of an earlier join ("server.portfolio_id").
	On OrderedMap[string] `yaml:"on"`
}

// KeyTemplates are the templates of a table or index key.
type KeyTemplates struct {
	PK string `yaml:"pk"`
	SK string `yaml:"sk"`
}

// IndexTemplates are an entity's templates for one index's key attributes.
type IndexTemplates struct {
	PK string `yaml:"pk"`
	SK string `yaml:"sk"`
	// When limits the index to rows that satisfy a condition.
	When *Condition `yaml:"when"`
	// Sparse says that items left out of the index (a template met a
	// NULL, or when: did not hold) are left out on purpose: plan counts
	// them in a note instead of warning about half an index key.
	// omitempty keeps fingerprints of mappings without it as they were.
	Sparse bool `yaml:"sparse" json:"Sparse,omitempty"`
}

// Condition is a simple predicate on one column.
type Condition struct {
	Column  string   `yaml:"column"`
	Equals  *string  `yaml:"equals"`
	In      []string `yaml:"in"`
	NotNull bool     `yaml:"not_null"`
	// IsNull holds for rows where the column is NULL.
	IsNull bool `yaml:"is_null"`
}

// AttributeSpec maps one attribute. In the file it is either a string (a
// column "name", "alias.name", or a template containing "${") or a map.
type AttributeSpec struct {
	From     string  `yaml:"from"`
	Template string  `yaml:"template"`
	Value    *string `yaml:"value"`
	// Type overrides the default conversion: S, N, B, BOOL, M, L, SS, NS, BS.
	Type string `yaml:"type"`
	// shorthand records that the file used the string form.
	shorthand bool
}

// TTLSpec computes an expiry from a column plus an offset.
type TTLSpec struct {
	From string `yaml:"from"`
	// Offset is a duration such as 168h or 7d.
	Offset string `yaml:"offset"`
}

// ItemSpec is one item of a vertically partitioned row.
type ItemSpec struct {
	Type       string                      `yaml:"type"`
	Key        KeyTemplates                `yaml:"key"`
	Index      OrderedMap[*IndexTemplates] `yaml:"index"`
	Attributes OrderedMap[*AttributeSpec]  `yaml:"attributes"`
	// Inherit controls whether the entity's attributes are copied into
	// this item (default true).
	Inherit *bool `yaml:"inherit_attributes"`
}

// AccessPattern is a query the design must answer, with expectations,
// and optionally its SQL meaning: the application's query it replaces,
// which patterns --compare-source runs beside it (see docs/shadow.md).
type AccessPattern struct {
	Name   string        `yaml:"name"`
	Query  PatternQuery  `yaml:"query"`
	Expect *PatternCheck `yaml:"expect"`
	// Params says where the values of the query's ${name} and the SQL's
	// :name come from. Without it the query is literal, as written.
	Params *PatternParams `yaml:"params"`
	// SQL is the application's query, with the same :name parameters.
	SQL *PatternSQL `yaml:"sql"`
	// Compare says how a returned item corresponds to a returned row.
	Compare *PatternCompare `yaml:"compare"`
}

// PatternParams is where a pattern's parameters come from: one of a
// read-only SQL query whose named columns are the parameters (sampled),
// or literal tuples.
type PatternParams struct {
	SQL    string           `yaml:"sql"`
	Values []map[string]any `yaml:"values"`
}

// PatternSQL is a pattern's SQL meaning: one text for both engines (a
// string in the file), or one per engine ({postgres: …, mysql: …}).
type PatternSQL struct {
	Postgres string `yaml:"postgres"`
	MySQL    string `yaml:"mysql"`
	// shared records that the file gave one text for both.
	shared bool
}

// For returns the text for a driver ("postgres" or "mysql"), "" when the
// file gives none for it.
func (s *PatternSQL) For(driver string) string {
	if driver == "mysql" {
		return s.MySQL
	}
	return s.Postgres
}

// PatternCompare pairs returned items with returned rows: item attribute
// ← column, or a template over the row's columns ("${first} ${last}").
type PatternCompare struct {
	Attributes OrderedMap[string] `yaml:"attributes"`
	// Ordered compares in order (for SQL with ORDER BY); otherwise the
	// answers compare as multisets.
	Ordered bool `yaml:"ordered"`
}

// PatternQuery is a DynamoDB Query.
type PatternQuery struct {
	Index string `yaml:"index"`
	PK    string `yaml:"pk"`
	// Exactly one sort-key condition at most.
	SKEquals     *string  `yaml:"sk"`
	SKBeginsWith *string  `yaml:"sk_begins_with"`
	SKLess       *string  `yaml:"sk_lt"`
	SKLessEq     *string  `yaml:"sk_le"`
	SKGreater    *string  `yaml:"sk_gt"`
	SKGreaterEq  *string  `yaml:"sk_ge"`
	SKBetween    []string `yaml:"sk_between"`
	// Descending reverses sort-key order (ScanIndexForward=false).
	Descending bool `yaml:"descending"`
	Limit      int  `yaml:"limit"`
	// ShardRange expands "${shard}" in PK over 0..ShardRange-1 and merges
	// the results (for write-sharded keys).
	ShardRange int `yaml:"shards"`
}

// PatternCheck states what a pattern must return.
type PatternCheck struct {
	Count    *int `yaml:"count"`
	MinCount *int `yaml:"min_count"`
	// MaxCount bounds the count from above, e.g. a page of a collection
	// that must stay small.
	MaxCount *int     `yaml:"max_count"`
	Types    []string `yaml:"types"`
	FirstKey *struct {
		PK string `yaml:"pk"`
		SK string `yaml:"sk"`
	} `yaml:"first"`
	Keys []struct {
		PK string `yaml:"pk"`
		SK string `yaml:"sk"`
	} `yaml:"keys"`
}
