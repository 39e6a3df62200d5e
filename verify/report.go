package verify

// SchemaVersion is the version of the report's JSON schema. It changes
// only when a field is removed or changes meaning; new fields may appear
// within a version. docs/verify.md documents every field.
const SchemaVersion = 1

// Report is the result of a comparison: counts per entity, up to
// Options.Examples findings of each class with their attribute changes,
// and the rows that cannot become items.
type Report struct {
	SchemaVersion int `json:"schema_version"`
	// Command is verify, diff or prune.
	Command Mode   `json:"command"`
	Table   string `json:"table"`
	// KeySchema names the table's key attributes, to read Key.
	KeySchema KeySchema `json:"key_schema"`
	Source    string    `json:"source,omitempty"`
	Snapshot  string    `json:"snapshot,omitempty"`
	// InSync is true when nothing is to create, update or delete as stale.
	InSync bool `json:"in_sync"`
	// Sample is set when verify checked a sample of the rows.
	Sample *Sample `json:"sample,omitempty"`
	// Totals adds up Entities.
	Totals   Counts         `json:"totals"`
	Entities []EntityCounts `json:"entities"`
	// Sweep says how stale items were looked for: "table" (every item of
	// the table scanned), "collections" (the collections the rows produce
	// queried; collections no row produces were not looked at), "digests"
	// (an incremental key sweep's changed collections) or "none".
	Sweep Sweep `json:"sweep"`
	// CollectionsSwept is how many item collections were swept for stale
	// items: those the rows produce, queried (collections sweep), or those
	// of the table holding items the mapping recognises (table sweep).
	CollectionsSwept int64 `json:"collections_swept"`
	// KeyOnly is set for a key sweep (incremental runs, a sync's
	// resnapshot), which read the source's key columns only. KeysScanned
	// is how many target keys a table sweep's Scan read: every item of the
	// table.
	KeyOnly     bool  `json:"key_only,omitempty"`
	KeysScanned int64 `json:"target_keys_scanned,omitempty"`
	// SweepMode says how a key sweep read the target: "scan" (every key
	// of the table) or "query" (only the collections whose digest changed,
	// that appeared, vanished or were written by the run: see
	// Options.Digests). TargetKeysRead is the keys read either way;
	// CollectionsQueried the collections a query sweep read.
	SweepMode          string `json:"sweep_mode,omitempty"`
	TargetKeysRead     int64  `json:"target_keys_read,omitempty"`
	CollectionsQueried int64  `json:"collections_queried,omitempty"`
	// Collections is how many collections the source makes (the digests
	// recorded); CollectionsChanged those whose digest changed or that
	// appeared, CollectionsVanished those no row makes any more (a query
	// sweep's).
	Collections         int64 `json:"collections,omitempty"`
	CollectionsChanged  int64 `json:"collections_changed,omitempty"`
	CollectionsVanished int64 `json:"collections_vanished,omitempty"`
	// StaleCollections is how many collections hold stale items;
	// StaleByCollection lists the first Options.Examples of them by
	// partition key, each with its stale items counted per entity and its
	// first few stale keys: a collection whose rows were all deleted is one
	// entry, not one line per item.
	StaleCollections  int64             `json:"stale_collections"`
	StaleByCollection []StaleCollection `json:"stale_by_collection"`
	// OtherItems is how many items the sweep read that no row produces and
	// that the mapping does not recognise as its own (no item type of the
	// mapping, no entity's sort-key prefix): never stale, never deleted.
	OtherItems int64 `json:"other_items"`
	// OutsideFilter is how many items of entities read through where: or
	// query: a table sweep found in collections no row produces: the filter
	// says nothing of them (another tenant's), so they are left alone.
	OutsideFilter int64 `json:"items_outside_filter"`
	// SweepReadUnits is the read capacity the sweep's Scan and Query
	// requests consumed, as DynamoDB reports it (ReturnConsumedCapacity).
	SweepReadUnits float64 `json:"sweep_read_units"`
	// KeysSpilled is how many keys went to sorted runs in temporary files
	// (--temp-dir) because they exceeded the memory budget.
	KeysSpilled int64 `json:"keys_spilled"`
	// Deleted is how many stale items prune deleted.
	Deleted int64 `json:"deleted"`
	// DuplicateKeys is how many items share their key with an earlier one
	// (migrate would reject them as collisions).
	DuplicateKeys int64    `json:"duplicate_keys"`
	Examples      Examples `json:"examples"`
	// RowErrors lists the first rows (by entity and key) that cannot
	// become items; Totals.RowErrors counts them all.
	RowErrors []RowError `json:"row_errors"`
	Seconds   float64    `json:"seconds"`
}

// The key sweep's modes (Report.SweepMode).
const (
	SweepScan  = "scan"
	SweepQuery = "query"
)

// KeySchema is the table's key, and the type attribute that marks items
// as the mapping's.
type KeySchema struct {
	PK            KeyAttribute  `json:"pk"`
	SK            *KeyAttribute `json:"sk,omitempty"`
	TypeAttribute string        `json:"type_attribute,omitempty"`
}

// KeyAttribute is a key attribute's name and type (S, N or B).
type KeyAttribute struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Sample says which rows verify checked.
type Sample struct {
	Fraction float64 `json:"fraction"`
	Seed     uint64  `json:"seed"`
}

// Counts are what a comparison found, for one entity or in total.
type Counts struct {
	// RowsSeen is every source row read; RowsSampled those checked (all of
	// them unless sampling).
	RowsSeen    int64 `json:"rows_seen"`
	RowsSampled int64 `json:"rows_sampled"`
	// RowErrors are rows that cannot become items (migrate would reject
	// them or stop); they are neither checked nor counted below.
	RowErrors int64 `json:"row_errors"`
	// Items is the items built from the sampled rows and looked up:
	// Create + Update + Unchanged (0 for prune, which looks nothing up).
	Items     int64 `json:"items_checked"`
	Create    int64 `json:"create"`
	Update    int64 `json:"update"`
	Unchanged int64 `json:"unchanged"`
	// Stale items look like the mapping's (see owner.go) and are produced
	// by no row.
	Stale int64 `json:"stale"`
}

// Differences is how many items differ: create, update and stale.
func (c Counts) Differences() int64 { return c.Create + c.Update + c.Stale }

func (c *Counts) add(o Counts) {
	c.RowsSeen += o.RowsSeen
	c.RowsSampled += o.RowsSampled
	c.RowErrors += o.RowErrors
	c.Items += o.Items
	c.Create += o.Create
	c.Update += o.Update
	c.Unchanged += o.Unchanged
	c.Stale += o.Stale
}

// EntityCounts are one entity's counts.
type EntityCounts struct {
	Entity string `json:"entity"`
	Counts
}

// Examples are up to Options.Examples findings of each class, ordered by
// key.
type Examples struct {
	Create []Finding `json:"create"`
	Update []Finding `json:"update"`
	Stale  []Finding `json:"stale"`
}

// Finding is one item that differs. Changes say what writing the source's
// item would do: for create every attribute is added, for stale every
// attribute is removed (the item would be deleted), for update only the
// attributes that differ are listed.
type Finding struct {
	Entity  string   `json:"entity"`
	Type    string   `json:"type,omitempty"`
	Key     Key      `json:"key"`
	Changes []Change `json:"changes"`
}

// StaleCollection is one item collection holding stale items.
type StaleCollection struct {
	// PK is the partition key's value as text, as Key.PK.
	PK string `json:"pk"`
	// Items is how many stale items the collection holds; Entities counts
	// them per entity, in mapping order.
	Items    int64         `json:"items"`
	Entities []EntityStale `json:"entities"`
	// Examples are its first stale items by sort key (at most
	// collectionExamples).
	Examples []StaleKey `json:"examples"`
}

// EntityStale is how many stale items of one entity a collection holds.
type EntityStale struct {
	Entity string `json:"entity"`
	Items  int64  `json:"items"`
}

// StaleKey is a stale item of a StaleCollection: its entity and its sort
// key (absent in a table without one).
type StaleKey struct {
	Entity string  `json:"entity"`
	SK     *string `json:"sk,omitempty"`
}

// RowError is a source row that cannot become an item.
type RowError struct {
	Entity    string `json:"entity"`
	SourceKey string `json:"source_key"`
	Attribute string `json:"attribute,omitempty"`
	Reason    string `json:"reason"`
}

// The finding classes, as the report names them.
const (
	ClassCreate    = "create"
	ClassUpdate    = "update"
	ClassUnchanged = "unchanged"
	ClassStale     = "stale"
)
