package pipeline

import "github.com/dynafold/dynafold/internal/render"

// Thousands writes n with comma thousands separators (1,234,567), for
// terminal output; JSON and reports keep plain numbers.
func Thousands(n int64) string { return render.Thousands(n) }

// ThousandsF is Thousands for a rate, rounded to a whole number.
func ThousandsF(f float64) string { return Thousands(int64(f + 0.5)) }
