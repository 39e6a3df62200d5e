package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/dynafold/dynafold/internal/render"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r *Report) statusLine() string {
	switch r.Status {
	case StatusMappingErrors:
		return "the mapping has errors: fix them before migrating"
	case StatusDataErrors:
		return "the data breaks DynamoDB's hard limits: migrate would reject rows or fail"
	}
	if r.Counts.Warnings > 0 {
		return "no errors; review the warnings"
	}
	return "no errors"
}

func countsLine(c Counts) string {
	return fmt.Sprintf("%d errors, %d warnings, %d notes", c.Errors, c.Warnings, c.Notes)
}

// WriteText writes the report for a terminal.
func (r *Report) WriteText(w io.Writer) error {
	ew := render.NewWriter(w)
	ew.Printf("plan for table %s", r.Table)
	if r.Source != "" {
		ew.Printf(" from %s", r.Source)
	}
	ew.Printf("\n%s (%s)\n", r.statusLine(), countsLine(r.Counts))
	if r.Sampling != nil {
		ew.Printf("%s\n", r.Sampling.Note)
	}
	if len(r.Findings) > 0 {
		ew.Printf("\nFINDINGS\n")
		for _, f := range r.Findings {
			where := f.Path
			if where == "" {
				where = "-"
			}
			ew.Printf("  %-7s %-22s %s\n          %s\n", f.Severity, f.Check, where, indent(f.Message, "          "))
		}
	}
	if len(r.Entities) > 0 {
		ew.Printf("\nENTITIES\n")
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		hdr := "  ENTITY\tROWS\tITEMS\tREJECTED\tBYTES\tMIN\tP50\tP99\tMAX\tMAX PK\tMAX SK\tWCU\t"
		for _, ix := range r.Indexes {
			hdr += ix.Index + " WCU\t"
		}
		fmt.Fprintln(tw, hdr)
		for _, e := range r.Entities {
			line := "  " + e.Entity + "\t" + cells("\t", e.Rows, e.Items, e.RowErrors+e.RowsOverLimit, e.Bytes,
				e.ItemSize.Min, e.ItemSize.P50, e.ItemSize.P99, e.ItemSize.Max, int64(e.MaxPKBytes), int64(e.MaxSKBytes), e.WriteUnits)
			for _, u := range e.IndexUnits {
				line += fmt.Sprintf("%s\t", num(u.Units))
			}
			fmt.Fprintln(tw, line)
		}
		if t := r.Totals; t != nil {
			line := "  total\t" + cells("\t", t.Rows, t.Items, sumRejected(r.Entities), t.Bytes,
				t.ItemSize.Min, t.ItemSize.P50, t.ItemSize.P99, t.ItemSize.Max, int64(t.MaxPKBytes), int64(t.MaxSKBytes), t.WriteUnits)
			for _, ix := range r.Indexes {
				line += fmt.Sprintf("%s\t", num(ix.WriteUnits))
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
		for _, e := range r.Entities {
			if e.Split != nil {
				ew.Printf("  %s: %s\n", e.Entity, splitText(e.Split))
			}
		}
	}
	if t := r.Totals; t != nil {
		ew.Printf("\nTABLE %s\n", r.Table)
		ew.Printf("  items: %s, %s; size min %s, p50 %s, p99 %s, max %s bytes (limit %s)\n", num(t.Items), render.Bytes(t.Bytes), num(t.ItemSize.Min), num(t.ItemSize.P50), num(t.ItemSize.P99), num(t.ItemSize.Max), num(r.Limits.ItemBytes))
		ew.Printf("  keys: partition key up to %s (limit %s), sort key up to %s (limit %s)\n", plural(int64(t.MaxPKBytes), "byte"), num(r.Limits.PartitionKeyBytes), plural(int64(t.MaxSKBytes), "byte"), num(r.Limits.SortKeyBytes))
		ew.Printf("  partition keys: %s\n", distinctText(t.PartitionKeys))
		ew.Printf("    most items:  %s\n", keyList(t.PartitionKeys.TopByItems, wItems))
		ew.Printf("    most bytes:  %s\n", keyList(t.PartitionKeys.TopByBytes, wBytes))
		ew.Printf("  largest items:\n")
		for _, li := range t.LargestItems {
			ew.Printf("    %8d bytes  %s %s  %s\n", li.Bytes, li.Entity, li.SourceKey, li.Key)
		}
		ew.Printf("  duplicate keys: %s\n", dupText(t.Duplicates))
	}
	if len(r.Indexes) > 0 {
		ew.Printf("\nINDEXES\n")
		for _, ix := range r.Indexes {
			ew.Printf("  %s (%s, projection %s): %s items, %s, %s write units\n", ix.Index, ix.Type, ix.Projection, num(ix.Items), render.Bytes(ix.Bytes), num(ix.WriteUnits))
			if ks := ix.PartitionKeys; ks != nil {
				ew.Printf("    partition keys: %s; the most frequent holds %.1f%% of the items\n", distinctText(*ks), 100*ks.TopShare)
				ew.Printf("    most items:  %s\n", keyList(ks.TopByItems, wItems))
			}
		}
	}
	if e := r.Estimates; e != nil {
		ew.Printf("\nESTIMATES\n")
		ew.Printf("  write units: %s\n", unitsText(e.WriteUnits))
		ew.Printf("  cost: %s, for %s\n", usd(e.Cost.TotalUSD), e.Cost.Note)
		ew.Printf("  duration: %s at %s write units per second, limited by %s (rate: %s)\n", render.Seconds(e.Duration.Seconds), rate(e.Duration.Rate), e.Duration.LimitedBy, e.Duration.RateSource)
		ew.Printf("  storage: %s\n", storageText(e.Storage))
	}
	if t := r.Target; t != nil && t.Checked {
		ew.Printf("\nTARGET\n  %s\n", targetText(r.Table, t))
	}
	if s := r.Sync; s != nil {
		ew.Printf("\nSYNC READINESS\n  %s\n", s.text())
	}
	if inc := r.Incremental; inc != nil {
		ew.Printf("\nINCREMENTAL RUNS\n  %s\n", strings.Join(inc.lines(), "\n  "))
	}
	if rv := r.Reversible; rv != nil {
		ew.Printf("\nREVERSIBILITY (fail-back)\n")
		if err := rv.WriteText(ew, "  "); err != nil {
			return err
		}
	}
	if len(r.Methods) > 0 {
		ew.Printf("\nMETHODS\n")
		for _, m := range r.Methods {
			ew.Printf("  - %s\n", m)
		}
	}
	return ew.Err()
}

// WriteMarkdown writes the report as Markdown.
func (r *Report) WriteMarkdown(w io.Writer) error {
	ew := render.NewWriter(w)
	ew.Printf("## Plan for table `%s`\n\n", r.Table)
	if r.Source != "" {
		ew.Printf("Source: `%s`. ", r.Source)
	}
	ew.Printf("**%s** (%s).\n\n", r.statusLine(), countsLine(r.Counts))
	if r.Sampling != nil {
		ew.Printf("%s.\n\n", strings.TrimSuffix(r.Sampling.Note, "."))
	}
	if len(r.Findings) > 0 {
		ew.Printf("### Findings\n\n| severity | check | path | message |\n|---|---|---|---|\n")
		for _, f := range r.Findings {
			ew.Printf("| %s | %s | %s | %s |\n", f.Severity, f.Check, code(f.Path), render.Markdown(f.Message))
		}
		ew.Printf("\n")
	}
	if len(r.Entities) > 0 {
		ew.Printf("### Entities\n\n| entity | rows | items | rejected | bytes | min | p50 | p99 | max | max PK | max SK | WCU |")
		for _, ix := range r.Indexes {
			ew.Printf(" %s WCU |", ix.Index)
		}
		ew.Printf("\n|---|%s\n", strings.Repeat("---:|", 11+len(r.Indexes)))
		for _, e := range r.Entities {
			ew.Printf("| %s | %s", e.Entity, cells(" | ", e.Rows, e.Items, e.RowErrors+e.RowsOverLimit, e.Bytes,
				e.ItemSize.Min, e.ItemSize.P50, e.ItemSize.P99, e.ItemSize.Max, int64(e.MaxPKBytes), int64(e.MaxSKBytes), e.WriteUnits))
			for _, u := range e.IndexUnits {
				ew.Printf(" %s |", num(u.Units))
			}
			ew.Printf("\n")
		}
		if t := r.Totals; t != nil {
			ew.Printf("| **total** | %s", cells(" | ", t.Rows, t.Items, sumRejected(r.Entities), t.Bytes,
				t.ItemSize.Min, t.ItemSize.P50, t.ItemSize.P99, t.ItemSize.Max, int64(t.MaxPKBytes), int64(t.MaxSKBytes), t.WriteUnits))
			for _, ix := range r.Indexes {
				ew.Printf(" %s |", num(ix.WriteUnits))
			}
			ew.Printf("\n")
		}
		ew.Printf("\n")
		for _, e := range r.Entities {
			if e.Split != nil {
				ew.Printf("- `%s`: %s.\n", e.Entity, splitText(e.Split))
			}
		}
		if hasSplit(r.Entities) {
			ew.Printf("\n")
		}
	}
	if t := r.Totals; t != nil {
		ew.Printf("### Table `%s`\n\n", r.Table)
		ew.Printf("- Items: %s, %s; size min %s, p50 %s, p99 %s, max %s bytes (limit %s).\n", num(t.Items), render.Bytes(t.Bytes), num(t.ItemSize.Min), num(t.ItemSize.P50), num(t.ItemSize.P99), num(t.ItemSize.Max), num(r.Limits.ItemBytes))
		ew.Printf("- Keys: partition key up to %s (limit %s), sort key up to %s (limit %s).\n", plural(int64(t.MaxPKBytes), "byte"), num(r.Limits.PartitionKeyBytes), plural(int64(t.MaxSKBytes), "byte"), num(r.Limits.SortKeyBytes))
		ew.Printf("- Partition keys: %s.\n", distinctText(t.PartitionKeys))
		ew.Printf("  - Most items: %s.\n", keyList(t.PartitionKeys.TopByItems, wItems))
		ew.Printf("  - Most bytes (item collections): %s.\n", keyList(t.PartitionKeys.TopByBytes, wBytes))
		ew.Printf("- Duplicate keys: %s.\n\n", dupText(t.Duplicates))
		if len(t.LargestItems) > 0 {
			ew.Printf("| largest items | bytes | entity | source key | item key |\n|---|---:|---|---|---|\n")
			for i, li := range t.LargestItems {
				ew.Printf("| %s | %s | %s | %s | %s |\n", num(i+1), num(li.Bytes), li.Entity, code(li.SourceKey), code(li.Key))
			}
			ew.Printf("\n")
		}
	}
	if len(r.Indexes) > 0 {
		ew.Printf("### Indexes\n\n| index | type | projection | items | bytes | write units | distinct PK values | top share |\n|---|---|---|---:|---:|---:|---:|---:|\n")
		for _, ix := range r.Indexes {
			distinct, share := "(table's)", "–"
			if ks := ix.PartitionKeys; ks != nil {
				distinct = fmt.Sprint(ks.Distinct)
				if !ks.DistinctExact {
					distinct = "≈" + distinct
				}
				share = fmt.Sprintf("%.1f%%", 100*ks.TopShare)
			}
			ew.Printf("| %s | %s | %s | %s | %s | %s | %s | %s |\n", ix.Index, ix.Type, ix.Projection, num(ix.Items), num(ix.Bytes), num(ix.WriteUnits), distinct, share)
		}
		ew.Printf("\n")
	}
	if e := r.Estimates; e != nil {
		ew.Printf("### Estimates\n\n")
		ew.Printf("- Write units: %s.\n", unitsText(e.WriteUnits))
		ew.Printf("- Cost: %s, for %s.\n", usd(e.Cost.TotalUSD), e.Cost.Note)
		ew.Printf("- Duration: %s at %s write units per second, limited by %s (rate: %s).\n", render.Seconds(e.Duration.Seconds), rate(e.Duration.Rate), e.Duration.LimitedBy, e.Duration.RateSource)
		ew.Printf("- Storage: %s.\n\n", storageText(e.Storage))
	}
	if s := r.Sync; s != nil {
		ew.Printf("### Sync readiness\n\n")
		for _, l := range s.lines() {
			ew.Printf("- %s\n", strings.TrimSpace(l))
		}
		ew.Printf("\n")
	}
	if inc := r.Incremental; inc != nil {
		ew.Printf("### Incremental runs\n\n")
		for _, l := range inc.lines() {
			ew.Printf("- %s\n", l)
		}
		ew.Printf("\n")
	}
	if t := r.Target; t != nil && t.Checked {
		ew.Printf("### Target\n\n%s.\n\n", targetText(r.Table, t))
	}
	if rv := r.Reversible; rv != nil {
		if err := rv.WriteMarkdown(ew, 3); err != nil {
			return err
		}
	}
	if len(r.Methods) > 0 {
		ew.Printf("### Methods\n\n")
		for _, m := range r.Methods {
			ew.Printf("- %s.\n", m)
		}
	}
	return ew.Err()
}

func indent(s, prefix string) string { return strings.ReplaceAll(s, "\n", "\n"+prefix) }

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

func sumRejected(es []EntityReport) int64 {
	var n int64
	for _, e := range es {
		n += e.RowErrors + e.RowsOverLimit
	}
	return n
}

func distinctText(ks KeySpaceReport) string {
	s := fmt.Sprintf("%s distinct values", num(ks.Distinct))
	if !ks.DistinctExact {
		s = "about " + s + " (HyperLogLog estimate)"
	}
	return s
}

func keyList(ks []KeyStat, w int) string {
	if len(ks) == 0 {
		return "none"
	}
	parts := make([]string, len(ks))
	for i, k := range ks {
		var v string
		switch w {
		case wItems:
			v = plural(k.Items, "item")
		case wBytes:
			v = render.Bytes(k.Bytes)
		default:
			v = fmt.Sprintf("%s write units", num(k.WriteUnits))
		}
		if k.Overstated > 0 {
			v += fmt.Sprintf(" (at most; overstated by up to %s)", num(k.Overstated))
		}
		parts[i] = fmt.Sprintf("%q %s", k.Key, v)
	}
	return strings.Join(parts, ", ")
}

func dupText(d DuplicateReport) string {
	s := "none"
	if d.Count > 0 {
		s = num(d.Count)
	}
	if !d.Exact {
		s += fmt.Sprintf(" (a lower bound: %s keys were checked only against earlier ones)", num(d.Unchecked))
	}
	return s
}

func unitsText(w WriteUnitEstimate) string {
	s := fmt.Sprintf("%s table", num(w.Table))
	for _, ix := range w.Indexes {
		s += fmt.Sprintf(" + %s %s", num(ix.Units), ix.Index)
	}
	if len(w.Indexes) > 0 {
		s += fmt.Sprintf(" = %s", num(w.Total))
	}
	return s
}

// usd shows dollars with at least cents and three significant digits,
// never in exponent form.
func usd(v float64) string {
	if v <= 0 {
		return "$0.00"
	}
	decimals := max(2, int(-math.Floor(math.Log10(v)))+2)
	return fmt.Sprintf("$%.*f", decimals, v)
}

// num shows an integer with thousands separators.
func num[T int | int64](v T) string { return render.Thousands(int64(v)) }

// rate shows a write rate.
func rate(v float64) string {
	if v == math.Trunc(v) && v < 1e15 {
		return num(int64(v))
	}
	return fmt.Sprintf("%g", v)
}

func storageText(s StorageEstimate) string {
	out := "table " + render.Bytes(s.TableBytes)
	for _, ix := range s.Indexes {
		out += fmt.Sprintf(", %s %s", ix.Index, render.Bytes(ix.Bytes))
	}
	if len(s.Indexes) > 0 {
		out += ", total " + render.Bytes(s.TotalBytes)
	}
	return out
}

func targetText(table string, t *TargetInfo) string {
	switch {
	case t.Error != "":
		return "could not describe table " + table + ": " + t.Error
	case !t.Exists:
		return "table " + table + " does not exist yet"
	case t.ProvisionedWrite > 0:
		return fmt.Sprintf("table %s exists, provisioned with %s write units per second", table, num(t.ProvisionedWrite))
	}
	return "table " + table + " exists, on-demand"
}

// cells joins numbers with separators, ending with one.
func cells(sep string, vs ...int64) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(num(v))
		b.WriteString(sep)
	}
	return strings.TrimRight(b.String(), " ")
}

// plural shows a count with its noun.
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return num(n) + " " + noun + "s"
}

func atLeast(overstated int64) string {
	if overstated > 0 {
		return "at least "
	}
	return ""
}

// splitText describes an entity's split aggregates.
func splitText(sr *SplitReport) string {
	if sr.Items == 0 {
		return fmt.Sprintf("no item split (parts would be held to %s bytes)", num(int64(sr.LimitBytes)))
	}
	return fmt.Sprintf("%s split into %s (at most %s per item); largest part %s bytes, whole (limit %s)",
		plural(sr.Items, "item"), plural(sr.Parts, "part"), num(int64(sr.MaxParts)), num(int64(sr.MaxPartBytes)), num(int64(sr.LimitBytes)))
}

func hasSplit(es []EntityReport) bool {
	for _, e := range es {
		if e.Split != nil {
			return true
		}
	}
	return false
}
