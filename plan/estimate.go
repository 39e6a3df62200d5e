package plan

import (
	"fmt"
)

// EstimateInput is what the estimates are computed from: totals for the
// whole source (already scaled when sampled) and the rates in effect.
type EstimateInput struct {
	Items      int64
	TableBytes int64 // sum of item sizes
	TableUnits int64 // sum over items of ceil(size / 1 KB)
	Indexes    []IndexInput
	// HotKey and HotUnits: the partition-key value (of the table or a
	// GSI) that takes the most write units; one partition writes at most
	// PartitionWCU per second, so it bounds the duration from below.
	HotKey       string
	HotUnits     int64
	PartitionWCU float64
	// WritePrice is USD per million write request units.
	WritePrice float64
	// MaxWCU is --max-wcu; ProvisionedWrite the table's provisioned write
	// capacity (from the target or the mapping), with ProvisionedFrom
	// saying which.
	MaxWCU           float64
	ProvisionedWrite int64
	ProvisionedFrom  string
}

// IndexInput is one index's share of the writes.
type IndexInput struct {
	Name   string
	Global bool
	Items  int64
	Bytes  int64 // sum of projected entry sizes
	Units  int64 // sum over entries of ceil(projected size / 1 KB)
	// Capacity is the index's provisioned write capacity (0: on-demand or
	// unknown).
	Capacity int64
}

// Estimates are the capacity, cost, time and storage a migration takes.
type Estimates struct {
	WriteUnits WriteUnitEstimate `json:"write_units"`
	Cost       CostEstimate      `json:"cost"`
	Duration   DurationEstimate  `json:"duration"`
	Storage    StorageEstimate   `json:"storage"`
}

// WriteUnitEstimate counts write units: each item written costs one unit
// per started kilobyte, in the table and again in every index it is
// projected into.
type WriteUnitEstimate struct {
	Table   int64       `json:"table"`
	Indexes []UnitCount `json:"indexes,omitempty"`
	Total   int64       `json:"total"`
}

// UnitCount is one index's write units.
type UnitCount struct {
	Index string `json:"index"`
	Items int64  `json:"items"`
	Units int64  `json:"write_units"`
}

// CostEstimate is the on-demand price of the writes.
type CostEstimate struct {
	PricePerMillion float64 `json:"usd_per_million_write_units"`
	TableUSD        float64 `json:"table_usd"`
	IndexesUSD      float64 `json:"indexes_usd"`
	TotalUSD        float64 `json:"total_usd"`
	Note            string  `json:"note"`
}

// DurationEstimate is how long the writes take at the rate in effect.
type DurationEstimate struct {
	// Rate is the table write rate assumed, in write units per second.
	Rate       float64 `json:"rate_wcu_per_second"`
	RateSource string  `json:"rate_source"`
	Seconds    float64 `json:"seconds"`
	// LimitedBy names what sets the duration: the table rate, an index's
	// capacity, or the hottest partition.
	LimitedBy string `json:"limited_by"`
	// LoadSeconds is the duration at the table rate alone, over which hot
	// keys are judged.
	LoadSeconds float64 `json:"load_seconds"`
}

// StorageEstimate is the stored size: items plus DynamoDB's 100-byte
// per-item overhead, in the table and in each index.
type StorageEstimate struct {
	TableBytes int64        `json:"table_bytes"`
	Indexes    []IndexBytes `json:"indexes,omitempty"`
	TotalBytes int64        `json:"total_bytes"`
}

// IndexBytes is one index's stored size.
type IndexBytes struct {
	Index string `json:"index"`
	Bytes int64  `json:"bytes"`
}

// Estimate computes the estimates. It is a pure function of its input.
func Estimate(in EstimateInput) Estimates {
	var est Estimates
	w := &est.WriteUnits
	w.Table = in.TableUnits
	w.Total = in.TableUnits
	var indexUnits int64
	for _, ix := range in.Indexes {
		w.Indexes = append(w.Indexes, UnitCount{Index: ix.Name, Items: ix.Items, Units: ix.Units})
		indexUnits += ix.Units
	}
	w.Total += indexUnits

	price := in.WritePrice
	if price <= 0 {
		price = DefaultWritePrice
	}
	est.Cost = CostEstimate{
		PricePerMillion: price,
		TableUSD:        float64(in.TableUnits) * price / 1e6,
		IndexesUSD:      float64(indexUnits) * price / 1e6,
		TotalUSD:        float64(w.Total) * price / 1e6,
		Note: fmt.Sprintf("on-demand writes at $%g per million write request units, %s; a provisioned table is billed for its capacity-hours instead",
			price, priceSource(price)),
	}

	d := &est.Duration
	switch {
	case in.MaxWCU > 0:
		d.Rate, d.RateSource = in.MaxWCU, "--max-wcu"
	case in.ProvisionedWrite > 0:
		d.Rate = float64(in.ProvisionedWrite)
		d.RateSource = in.ProvisionedFrom
	default:
		d.Rate = onDemandStartWCU
		d.RateSource = fmt.Sprintf("assumed: a new on-demand table sustains %s write units per second at first; --max-wcu plans at another rate", num(int64(onDemandStartWCU)))
	}
	d.LoadSeconds = float64(in.TableUnits) / d.Rate
	d.Seconds, d.LimitedBy = d.LoadSeconds, "the table write rate"
	for _, ix := range in.Indexes {
		if ix.Capacity > 0 {
			if s := float64(ix.Units) / float64(ix.Capacity); s > d.Seconds {
				d.Seconds = s
				d.LimitedBy = fmt.Sprintf("index %s's provisioned write capacity (%s)", ix.Name, num(ix.Capacity))
			}
		}
	}
	pw := in.PartitionWCU
	if pw <= 0 {
		pw = partitionWCU
	}
	// A partition holding under a second of writes is a burst that
	// retries absorb; past that it sets a floor on the duration.
	if s := float64(in.HotUnits) / pw; s > 1 && s > d.Seconds {
		d.Seconds = s
		d.LimitedBy = fmt.Sprintf("partition key %s: %s write units at %s per second", in.HotKey, num(in.HotUnits), rate(pw))
	}

	st := &est.Storage
	st.TableBytes = in.TableBytes + indexEntryOverhead*in.Items
	st.TotalBytes = st.TableBytes
	for _, ix := range in.Indexes {
		b := ix.Bytes + indexEntryOverhead*ix.Items
		st.Indexes = append(st.Indexes, IndexBytes{Index: ix.Name, Bytes: b})
		st.TotalBytes += b
	}
	return est
}

func priceSource(price float64) string {
	if price == DefaultWritePrice {
		return "the us-east-1 price (--write-price to change)"
	}
	return "as given by --write-price"
}
