package plan

import (
	"fmt"
	"io"

	"github.com/dynafold/dynafold/internal/render"
	"github.com/dynafold/dynafold/mapping"
)

// DefaultImportPrice is ImportTable's price in USD per GB of uncompressed
// source data (us-east-1, Amazon DynamoDB pricing page).
const DefaultImportPrice = 0.15

// ImportEstimate is what loading the table through export and ImportTable
// costs, next to what BatchWrite costs for the same items.
type ImportEstimate struct {
	// Bytes is the items' size by DynamoDB's rules; ImportTable bills the
	// uncompressed size of the files, which is larger (DynamoDB JSON adds
	// type tags and quoting), so USD is a lower bound. The manifest of an
	// export gives the exact bytes.
	Bytes         int64   `json:"bytes"`
	PricePerGB    float64 `json:"usd_per_gb"`
	USD           float64 `json:"usd"`
	BatchWriteUSD float64 `json:"batch_write_usd"`
	Note          string  `json:"note"`
}

// ForImport adds what matters when the items are loaded with export and
// ImportTable rather than written: ImportTable creates a new table only,
// and cannot create local secondary indexes (both refused as mapping
// errors, exit 2), and the import's cost beside BatchWrite's. The checks
// every item already passes in plan (size, key lengths and types, UTF-8,
// duplicate keys) matter more here: one invalid item fails the whole
// import, and a duplicate key is silently last-writer-wins.
func (r *Report) ForImport(p *mapping.Plan, pricePerGB float64) {
	for _, ix := range p.Table.Indexes {
		if !ix.Global {
			r.Findings = append(r.Findings, Finding{Severity: Error, Origin: Mapping, Check: "import.local_index", Path: "target.indexes." + ix.Name,
				Message: fmt.Sprintf("ImportTable cannot create local secondary index %s: load this table with table create and migrate instead", ix.Name)})
		}
	}
	if r.Target != nil && r.Target.Exists {
		r.Findings = append(r.Findings, Finding{Severity: Error, Origin: Mapping, Check: "import.table_exists", Path: "target.table",
			Message: fmt.Sprintf("table %s exists: ImportTable creates new tables only (delete it, or use migrate)", r.Table)})
	}
	est := &ImportEstimate{PricePerGB: pricePerGB,
		Note: "lower bound: ImportTable bills the uncompressed DynamoDB JSON, larger than the item sizes; an export's manifest gives the exact bytes"}
	if r.Totals != nil {
		est.Bytes = r.Totals.Bytes
	}
	est.USD = float64(est.Bytes) / (1 << 30) * pricePerGB
	if r.Estimates != nil {
		est.BatchWriteUSD = r.Estimates.Cost.TotalUSD
	}
	r.Import = est
	r.finish()
}

// WriteImportText prints the import section of the text report.
func (r *Report) WriteImportText(w io.Writer) error {
	if r.Import == nil {
		return nil
	}
	e := r.Import
	_, err := fmt.Fprintf(w, "\nImport (export + ImportTable)\n  %s of items at $%.2f/GB: ≥ $%.2f   (BatchWrite on demand: $%.2f; no write capacity used)\n  %s\n",
		render.Bytes(e.Bytes), e.PricePerGB, e.USD, e.BatchWriteUSD, e.Note)
	return err
}
