package plan

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Estimates computed by hand for a small dataset: items of 500, 1,024,
// 1,025 and 3,000 bytes cost 1 + 1 + 2 + 3 = 7 table write units; a GSI
// holding the last two entries in full costs 2 + 3 = 5.
func TestEstimateByHand(t *testing.T) {
	in := EstimateInput{
		Items: 4, TableBytes: 500 + 1024 + 1025 + 3000, TableUnits: 7,
		Indexes:    []IndexInput{{Name: "GSI1", Global: true, Items: 2, Bytes: 1025 + 3000, Units: 5}},
		WritePrice: 0.625,
	}
	est := Estimate(in)
	require.Equal(t, WriteUnitEstimate{Table: 7, Total: 12, Indexes: []UnitCount{{Index: "GSI1", Items: 2, Units: 5}}}, est.WriteUnits)
	require.InDelta(t, 12*0.625/1e6, est.Cost.TotalUSD, 1e-15)
	require.InDelta(t, 7*0.625/1e6, est.Cost.TableUSD, 1e-15)
	require.InDelta(t, 5*0.625/1e6, est.Cost.IndexesUSD, 1e-15)
	require.Contains(t, est.Cost.Note, "$0.625 per million write request units")
	// No rate given: a new on-demand table's 4,000 per second, stated.
	require.Equal(t, 4000.0, est.Duration.Rate)
	require.Contains(t, est.Duration.RateSource, "assumed")
	require.InDelta(t, 7.0/4000, est.Duration.Seconds, 1e-12)
	require.Equal(t, "the table write rate", est.Duration.LimitedBy)
	// Storage adds 100 bytes per item and per index entry.
	require.Equal(t, StorageEstimate{
		TableBytes: 5549 + 400, Indexes: []IndexBytes{{Index: "GSI1", Bytes: 4025 + 200}}, TotalBytes: 5949 + 4225,
	}, est.Storage)

	// --max-wcu sets the rate.
	in.MaxWCU = 2
	est = Estimate(in)
	require.Equal(t, 3.5, est.Duration.Seconds)
	require.Equal(t, "--max-wcu", est.Duration.RateSource)

	// A provisioned table's capacity, when --max-wcu is not given.
	in.MaxWCU = 0
	in.ProvisionedWrite, in.ProvisionedFrom = 7, "the table's provisioned write capacity (7)"
	est = Estimate(in)
	require.Equal(t, 1.0, est.Duration.Seconds)
	require.Equal(t, "the table's provisioned write capacity (7)", est.Duration.RateSource)

	// A GSI with less capacity than its share of the writes sets it.
	in.Indexes[0].Capacity = 1
	est = Estimate(in)
	require.Equal(t, 5.0, est.Duration.Seconds)
	require.Equal(t, "index GSI1's provisioned write capacity (1)", est.Duration.LimitedBy)

	// So does a partition holding more than a second of writes.
	in.HotKey, in.HotUnits, in.PartitionWCU = `PK "1"`, 6000, 1000
	est = Estimate(in)
	require.Equal(t, 6.0, est.Duration.Seconds)
	require.Equal(t, `partition key PK "1": 6,000 write units at 1,000 per second`, est.Duration.LimitedBy)

	// A different price.
	in.WritePrice = 1.25
	require.InDelta(t, 12*1.25/1e6, Estimate(in).Cost.TotalUSD, 1e-15)
}

func TestRendering(t *testing.T) {
	require.Equal(t, "1,234,567", num(int64(1234567)))
	require.Equal(t, "-1,000", num(-1000))
	require.Equal(t, "999", num(999))
	require.Equal(t, "$0.0000113", usd(0.00001125))
	require.Equal(t, "$12.50", usd(12.5))
}
