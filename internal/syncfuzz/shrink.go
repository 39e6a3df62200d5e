package syncfuzz

import (
	"context"
	"fmt"
)

// Shrink finds the shortest failing prefix of a failed run by bisecting
// the operation count: a run with the same seed and fewer operations
// commits exactly the first operations of the longer one (the column is
// added at the same operation, phases end at the same ones, the schema
// changes are drawn at the same ones: ddlDraws), so its
// result says whether the divergence was already there. Probes run
// without kills.
func Shrink(ctx context.Context, o Options, failed *Result) (*Result, error) {
	if failed.Divergence == nil {
		return nil, fmt.Errorf("the run did not diverge")
	}
	if o.DDLAt == 0 {
		o.DDLAt = o.Ops / 2
	}
	o.Kills, o.Keep, o.Log = 0, false, nil
	lo, hi := 0, failed.Divergence.Op // lo passes, hi fails
	best := failed
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		o.Ops = mid
		res, err := Run(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("shrinking at %d operations: %w", mid, err)
		}
		if res.Divergence != nil {
			hi, best = mid, res
		} else {
			lo = mid
		}
	}
	return best, nil
}
