package pipeline

import (
	"strconv"
	"strings"
	"time"
)

// Thousands writes n with comma thousands separators (1,234,567), for
// terminal output; JSON and reports keep plain numbers.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ThousandsF is Thousands for a rate, rounded to a whole number.
func ThousandsF(f float64) string { return Thousands(int64(f + 0.5)) }

// shortDuration is a duration in whole seconds, minutes and hours
// ("1h2m3s"), for an ETA.
func shortDuration(secs float64) string {
	return (time.Duration(secs+0.5) * time.Second).String()
}
