package main

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// scrapeMetrics reads sync's /metrics at addr: every sample by its name
// and labels as written (`dynafold_shadow_comparisons_total{pattern="p",table="t"}`).
func scrapeMetrics(addr string) (map[string]float64, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scraping sync's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping sync's metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("scraping sync's metrics: bad sample %q", line)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

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
