// Package render holds the text helpers every report, log line and
// progress display shares, so that one quantity reads the same wherever
// it is shown: counts with thousands separators, byte sizes (IEC units,
// 1 KiB = 1,024 bytes), durations, Markdown escaping, and a writer that
// keeps the first write error so a renderer can print unchecked.
//
// They are for people: JSON output keeps plain numbers.
package render
