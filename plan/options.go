package plan

import (
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
)

// DynamoDB figures the checks and estimates are measured against. Limits
// lets tests lower them; the defaults are the service's.
const (
	// maxLSICollectionBytes: with a local secondary index, an item
	// collection (the items of one partition key value plus their LSI
	// entries) is at most 10 GB.
	maxLSICollectionBytes = 10 << 30
	// partitionWCU: one partition accepts at most 1,000 write units per
	// second.
	partitionWCU = 1000
	// DefaultWritePrice is the on-demand price in USD per million write
	// request units in us-east-1 (standard table class).
	DefaultWritePrice = 0.625
	// onDemandStartWCU is what a new on-demand table sustains without
	// throttling: DynamoDB starts it at a previous peak of 2,000 write
	// units and serves up to twice the previous peak at once.
	onDemandStartWCU = 4000
	// indexEntryOverhead is the per-item overhead DynamoDB adds to stored
	// size in the table and in each index.
	indexEntryOverhead = 100
)

// Limits are the hard limits the data is checked against.
type Limits struct {
	// ItemBytes: an item, names and values, is at most 400 KB.
	ItemBytes int `json:"item_bytes"`
	// PartitionKeyBytes and SortKeyBytes bound key values (2,048 and
	// 1,024 bytes), for the table and for index keys.
	PartitionKeyBytes int `json:"partition_key_bytes"`
	SortKeyBytes      int `json:"sort_key_bytes"`
	// LSICollectionBytes bounds an item collection when the table has a
	// local secondary index.
	LSICollectionBytes int64 `json:"lsi_collection_bytes"`
	// PartitionWCU is the write rate one partition accepts.
	PartitionWCU float64 `json:"partition_wcu"`
}

// DefaultLimits returns DynamoDB's limits.
func DefaultLimits() Limits {
	return Limits{
		ItemBytes:          mapping.MaxItemBytes,
		PartitionKeyBytes:  mapping.MaxPartitionKeyBytes,
		SortKeyBytes:       mapping.MaxSortKeyBytes,
		LSICollectionBytes: maxLSICollectionBytes,
		PartitionWCU:       partitionWCU,
	}
}

// Options tune measuring and estimating. Zero values take the defaults.
type Options struct {
	Limits Limits
	// Sample is the fraction of source rows read (by a hash of each row's
	// primary key); 0 or 1 reads everything.
	Sample float64
	// Readers is how many shards are read at once; PageSize the rows per
	// keyset page; ShardsPerEntity how many key ranges an entity is split
	// into.
	Readers         int
	PageSize        int
	ShardsPerEntity int
	// MaxKeys is how many distinct partition-key values are counted
	// exactly per key space (the table, each GSI); beyond it heavy hitters
	// are tracked with Space-Saving and distinct values with HyperLogLog.
	MaxKeys int
	// HeavyHitters is the number of Space-Saving counters per key space.
	HeavyHitters int
	// MaxDupKeys is how many 64-bit item-key hashes are kept for duplicate
	// detection (about 20 bytes each).
	MaxDupKeys int
	// Top is how many largest items, collections and hot keys are listed;
	// MaxListed how many findings of one kind are listed before a count.
	Top       int
	MaxListed int
	// WritePrice is USD per million write request units.
	WritePrice float64
	// MaxWCU is the write rate the migration will use (--max-wcu); 0 uses
	// the target's provisioned capacity or the on-demand assumption.
	MaxWCU float64
}

func (o *Options) defaults() {
	if o.Limits == (Limits{}) {
		o.Limits = DefaultLimits()
	}
	if o.Sample <= 0 {
		o.Sample = 1
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.PageSize <= 0 {
		o.PageSize = pipeline.DefaultPageSize
	}
	if o.ShardsPerEntity <= 0 {
		o.ShardsPerEntity = 2 * o.Readers
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = 1_000_000
	}
	if o.HeavyHitters <= 0 {
		o.HeavyHitters = 10_000
	}
	if o.MaxDupKeys <= 0 {
		o.MaxDupKeys = 4_000_000
	}
	if o.Top <= 0 {
		o.Top = 5
	}
	if o.MaxListed <= 0 {
		o.MaxListed = 10
	}
	if o.WritePrice <= 0 {
		o.WritePrice = DefaultWritePrice
	}
}
