package main

import "strings"

// metricSum sums a metric's samples over their labels.
func metricSum(m map[string]float64, name string) float64 {
	var n float64
	for k, v := range m {
		if base, _, _ := strings.Cut(k, "{"); base == name {
			n += v
		}
	}
	return n
}

// metricByLabel is a metric's samples by the value of one label.
func metricByLabel(m map[string]float64, name, label string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		base, rest, _ := strings.Cut(k, "{")
		if base != name {
			continue
		}
		_, val, ok := strings.Cut(rest, label+`="`)
		if !ok {
			continue
		}
		// Label values escape \, " and newline; the patterns' names are
		// plain text, so only \" and \\ are undone.
		var b strings.Builder
		for i := 0; i < len(val) && val[i] != '"'; i++ {
			if val[i] == '\\' && i+1 < len(val) {
				i++
			}
			b.WriteByte(val[i])
		}
		out[b.String()] += v
	}
	return out
}
