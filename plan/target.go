package plan

// TargetInfo is what the caller learned about the target table. The plan
// never needs the table; when it can be described, its provisioned write
// capacity sets the duration estimate and its indexes are checked.
type TargetInfo struct {
	// Checked is set when the caller tried to describe the table.
	Checked bool `json:"checked"`
	// Error says why the table could not be described.
	Error  string `json:"error,omitempty"`
	Exists bool   `json:"exists"`
	// ProvisionedWrite is the table's provisioned write capacity; 0 for
	// on-demand.
	ProvisionedWrite int64 `json:"provisioned_write,omitempty"`
	// LocalIndexes names the table's local secondary indexes.
	LocalIndexes []string `json:"local_indexes,omitempty"`
	// Differences lists how the table differs from the mapping.
	Differences []string `json:"differences,omitempty"`
}
