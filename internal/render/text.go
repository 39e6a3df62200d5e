package render

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Thousands writes n with comma thousands separators (1,234,567).
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
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

// Bytes shows a size: exact bytes below 10 KiB ("9,999 bytes"), else one
// decimal in KiB, MiB, GiB or TiB ("10.0 GiB"). The units are IEC's, as
// the sizes are 1,024-based: a DynamoDB item's 400 KB limit is 400 KiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < 10*unit {
		return Thousands(n) + " bytes"
	}
	v, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB", "TiB"} {
		if v < unit {
			break
		}
		v, suffix = v/unit, s
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}

// Duration shows a length of time: under a second to three significant
// digits ("0.25s"), under a minute to a tenth of a second ("3.0s"), under
// a day in whole seconds ("1h2m3s"), and longer in days ("7 days",
// "1.5 days").
func Duration(d time.Duration) string {
	s := d.Seconds()
	switch {
	case s < 1:
		return fmt.Sprintf("%.3gs", s)
	case s < 60:
		return fmt.Sprintf("%.1fs", s)
	case d < 24*time.Hour:
		return d.Round(time.Second).String()
	}
	days := s / 86400
	if t := fmt.Sprintf("%.3g", days); t != "1" {
		return t + " days"
	}
	return "1 day"
}

// Seconds is Duration for a count of seconds, as reports hold them.
func Seconds(s float64) string {
	return Duration(time.Duration(math.Round(s * float64(time.Second))))
}

// markdown escapes what Markdown or HTML would read in text outside code
// spans; a line break becomes <br>, so the text can stand in a table cell.
var markdown = strings.NewReplacer("\\", "\\\\", "|", "\\|", "*", "\\*", "_", "\\_", "`", "\\`",
	"<", "&lt;", ">", "&gt;", "[", "\\[", "]", "\\]", "\n", "<br>")

// Markdown keeps text from being read as Markdown or HTML: in a
// paragraph, a list item or a table cell, it shows as written.
func Markdown(s string) string { return markdown.Replace(s) }
