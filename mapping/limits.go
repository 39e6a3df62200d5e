package mapping

// DynamoDB's limits that an item must respect before it is sent (Amazon
// DynamoDB Developer Guide, "Quotas in DynamoDB"), and the margin dynafold
// keeps below the item limit when it splits an aggregate.
const (
	// MaxItemBytes: an item, attribute names and values together, is at most 400 KB.
	MaxItemBytes = 400 * 1024
	// MaxPartitionKeyBytes: a partition key value is at most 2048 bytes.
	MaxPartitionKeyBytes = 2048
	// MaxSortKeyBytes: a sort key value is at most 1024 bytes.
	MaxSortKeyBytes = 1024
	// MaxKeyAttributeNameBytes: names of key attributes (table and index) are at most 255 bytes.
	MaxKeyAttributeNameBytes = 255
	// MaxAttributeNameBytes: other attribute names are at most 64 KB.
	MaxAttributeNameBytes = 65535
	// MaxNestingDepth: lists and maps nest at most 32 levels.
	MaxNestingDepth = 32
	// SplitMarginBytes is kept free below MaxItemBytes when an aggregate is
	// split: every part, head included, is at most SplitItemBytes by
	// dynafold's count. The count is already an upper bound of the server's
	// (numbers by the widest alignment, strings by UTF-8 bytes); the margin
	// covers what DynamoDB leaves undocumented ("approximately" for
	// numbers), at a cost of at most one part in a hundred.
	SplitMarginBytes = 4 * 1024
	// SplitItemBytes is the largest a split part may be.
	SplitItemBytes = MaxItemBytes - SplitMarginBytes
	// WriteUnitBytes: one write request unit covers an item of up to 1 KB.
	WriteUnitBytes = 1024
)

// WriteUnits is what writing an item of size bytes costs: one unit per
// started kilobyte, at least one.
func WriteUnits(size int) int {
	if size <= 0 {
		return 1
	}
	return (size + WriteUnitBytes - 1) / WriteUnitBytes
}
