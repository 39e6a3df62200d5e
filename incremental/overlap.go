package incremental

import (
	"fmt"
	"time"
)

// Layouts of the timestamps the sources print: PostgreSQL's timestamptz
// (offset "+00" or "+05:30"), timestamp and date, MySQL's DATETIME and
// TIMESTAMP with or without fractional seconds, and DATE.
var zoned = []string{
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07",
}

var plain = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

// Subtract returns the watermark w moved back by d, printed as the source
// prints it (with its offset when it had one), so that it can be bound
// against the change column.
func Subtract(w string, d time.Duration) (string, error) {
	for _, l := range zoned {
		if t, err := time.Parse(l, w); err == nil {
			return t.Add(-d).Format("2006-01-02 15:04:05.999999-07:00"), nil
		}
	}
	for _, l := range plain {
		if t, err := time.Parse(l, w); err == nil {
			return t.Add(-d).Format("2006-01-02 15:04:05.999999"), nil
		}
	}
	return "", fmt.Errorf("watermark %q is not a timestamp dynafold can read", w)
}
