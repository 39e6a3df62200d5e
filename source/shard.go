package source

import "github.com/dynafold/dynafold/value"

// IntShards splits the integer key space [min, max] into at most n ranges
// of about equal width. The first range is open below and the last open
// above, so rows inserted outside [min, max] while the run reads still
// belong to a shard.
func IntShards(min, max int64, n int) []Range {
	if n <= 1 || max <= min {
		return []Range{Full}
	}
	span := uint64(max-min) + 1
	if uint64(n) > span {
		n = int(span)
	}
	width := span / uint64(n)
	out := make([]Range, 0, n)
	var lo *value.Value
	for i := 1; i < n; i++ {
		b := value.IntValue(min + int64(width*uint64(i)))
		out = append(out, Range{Lo: lo, Hi: &b})
		lo = &b
	}
	return append(out, Range{Lo: lo})
}

// ValueShards turns sorted, distinct boundary values into ranges, open at
// both ends, for keys that are not integers (boundaries are sampled).
func ValueShards(bounds []value.Value) []Range {
	if len(bounds) == 0 {
		return []Range{Full}
	}
	out := make([]Range, 0, len(bounds)+1)
	var lo *value.Value
	for i := range bounds {
		b := bounds[i]
		out = append(out, Range{Lo: lo, Hi: &b})
		lo = &b
	}
	return append(out, Range{Lo: lo})
}
