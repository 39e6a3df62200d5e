package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/dynafold/dynafold/internal/render"
)

// This file renders a Report: JSON (the stable schema), text for a
// terminal and Markdown for a pull request. Text and Markdown share the
// wording built here.

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// maxValueRunes bounds a value in text and Markdown; the JSON has it whole.
const maxValueRunes = 100

func clip(s string) string {
	if utf8.RuneCountInString(s) <= maxValueRunes {
		return s
	}
	r := []rune(s)
	return string(r[:maxValueRunes-1]) + "…"
}

// verdict is the one-line result: a lead ("source and target differ")
// and its detail (the counts). "none stale" is said only after a sweep of
// the whole table; otherwise the detail says what was not checked.
func (r *Report) verdict() (lead, detail string) {
	t := r.Totals
	counts := fmt.Sprintf("%d to create, %d to update, %d stale", t.Create, t.Update, t.Stale)
	switch {
	case r.Command == ModePrune:
		return fmt.Sprintf("deleted %d stale %s", r.Deleted, plural(r.Deleted, "item", "items")), r.pruneScope()
	case r.Command == ModeDiff && r.InSync:
		return "nothing to change", fmt.Sprintf("%d %s unchanged%s", t.Unchanged, plural(t.Unchanged, "item", "items"), r.staleScope())
	case r.Command == ModeDiff:
		return fmt.Sprintf("migrate would change %d %s", t.Differences(), plural(t.Differences(), "item", "items")),
			fmt.Sprintf("%s (stale items are deleted only by migrate --prune); %d unchanged", counts, t.Unchanged)
	case r.InSync:
		return "source and target agree", fmt.Sprintf("%d %s checked%s", t.Items, plural(t.Items, "item", "items"), r.staleScope())
	}
	return "source and target differ", fmt.Sprintf("%s; %d unchanged", counts, t.Unchanged)
}

// staleScope ends an in-sync verdict with what the sweep proved.
func (r *Report) staleScope() string {
	switch r.Sweep {
	case SweepTable:
		return ", none stale"
	case SweepCollections:
		return fmt.Sprintf("; stale items checked in the %s %s the %s produce; collections no row produces were not checked",
			render.Thousands(r.CollectionsSwept), plural(r.CollectionsSwept, "collection", "collections"), r.rowsWord())
	case SweepDigests:
		return fmt.Sprintf("; stale items checked in the %s %s whose keys changed since the last sweep",
			render.Thousands(r.CollectionsSwept), plural(r.CollectionsSwept, "collection", "collections"))
	}
	return "; stale items were not looked for"
}

func (r *Report) rowsWord() string {
	if r.Sample != nil {
		return "sampled rows"
	}
	return "rows"
}

// pruneScope is a prune verdict's detail: what was swept.
func (r *Report) pruneScope() string {
	switch r.Sweep {
	case SweepTable:
		return fmt.Sprintf("the whole table swept, %s %s scanned", render.Thousands(r.KeysScanned), plural(r.KeysScanned, "item", "items"))
	case SweepCollections:
		return fmt.Sprintf("the %s %s the rows produce swept; collections no row produces were not checked",
			render.Thousands(r.CollectionsSwept), plural(r.CollectionsSwept, "collection", "collections"))
	case SweepDigests:
		return fmt.Sprintf("the %s %s whose keys changed swept", render.Thousands(r.CollectionsSwept), plural(r.CollectionsSwept, "collection", "collections"))
	}
	return "stale items were not looked for"
}

// sweepNote says which sweep ran, what it read and what it left alone.
func (r *Report) sweepNote() string {
	var s string
	switch r.Sweep {
	case SweepTable:
		s = fmt.Sprintf("sweep: the whole table, %s %s scanned (key and type attributes)", render.Thousands(r.KeysScanned), plural(r.KeysScanned, "item", "items"))
	case SweepCollections:
		s = fmt.Sprintf("sweep: the %s %s the %s produce, each queried; collections no row produces were not checked (--sweep table checks them)",
			render.Thousands(r.CollectionsSwept), plural(r.CollectionsSwept, "collection", "collections"), r.rowsWord())
	case SweepDigests:
		s = fmt.Sprintf("sweep: the %s %s whose keys changed since the last sweep, each queried", render.Thousands(r.CollectionsSwept), plural(r.CollectionsSwept, "collection", "collections"))
	default:
		return "sweep: none; stale items were not looked for"
	}
	if r.OtherItems > 0 {
		s += fmt.Sprintf("; %s %s not the mapping's, left alone", render.Thousands(r.OtherItems), plural(r.OtherItems, "item", "items"))
	}
	if r.OutsideFilter > 0 {
		s += fmt.Sprintf("; %s %s of filtered entities in collections no row produces, left alone", render.Thousands(r.OutsideFilter), plural(r.OutsideFilter, "item", "items"))
	}
	if r.KeysSpilled > 0 {
		s += fmt.Sprintf("; %s keys spilled to temporary files", render.Thousands(r.KeysSpilled))
	}
	return s + fmt.Sprintf("; %s read units", strconv.FormatFloat(r.SweepReadUnits, 'f', -1, 64))
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// sampleNote explains a sample.
func (r *Report) sampleNote() string {
	if r.Sample == nil {
		return ""
	}
	scope := "the whole table is still swept for stale items"
	if r.Sweep == SweepCollections {
		scope = "stale items are looked for only in the collections of checked rows"
	}
	return fmt.Sprintf("sample: %g%% of rows (seed %d), chosen by a hash of each row's primary key; %d of %d rows checked; %s",
		r.Sample.Fraction*100, r.Sample.Seed, r.Totals.RowsSampled, r.Totals.RowsSeen, scope)
}

// keyText renders a finding's key with the table's attribute names, in
// the notation of the report's values (Value.Text: strings quoted,
// numbers bare, binary b64"…") so that a key reads like the attributes
// beside it; the key's values are mapping.KeyText's.
func (r *Report) keyText(k Key) string {
	s := r.KeySchema.PK.Name + "=" + keyValueText(r.KeySchema.PK.Type, k.PK)
	if r.KeySchema.SK != nil && k.SK != nil {
		s += " " + r.KeySchema.SK.Name + "=" + keyValueText(r.KeySchema.SK.Type, *k.SK)
	}
	return s
}

func keyValueText(typ, v string) string {
	switch typ {
	case "N":
		return v
	case "B":
		return binaryLiteral(v)
	}
	return quote(v)
}

type section struct {
	class, title, mark string
	items              []Finding
	total              int64
}

func (r *Report) sections() []section {
	t := r.Totals
	return []section{
		{ClassCreate, fmt.Sprintf("%d to create", t.Create), "+", r.Examples.Create, t.Create},
		{ClassUpdate, fmt.Sprintf("%d to update", t.Update), "~", r.Examples.Update, t.Update},
		{ClassStale, fmt.Sprintf("%d stale, in %s %s", t.Stale, render.Thousands(r.StaleCollections), plural(r.StaleCollections, "collection", "collections")),
			"-", r.Examples.Stale, t.Stale},
	}
}

// staleLine is a line of the stale section, with its colour on a
// terminal.
type staleLine struct {
	text, colour string
}

// staleLines lists the stale items by collection: one line per
// collection with its counts per entity, then its first keys.
func (r *Report) staleLines() []staleLine {
	var out []staleLine
	for _, sc := range r.StaleByCollection {
		var ents []string
		for _, e := range sc.Entities {
			ents = append(ents, fmt.Sprintf("%s %s", e.Entity, render.Thousands(e.Items)))
		}
		out = append(out, staleLine{fmt.Sprintf("%s=%s: %s stale %s (%s)", r.KeySchema.PK.Name, keyValueText(r.KeySchema.PK.Type, sc.PK),
			render.Thousands(sc.Items), plural(sc.Items, "item", "items"), strings.Join(ents, ", ")), ansiRed})
		width := 0
		for _, k := range sc.Examples {
			width = max(width, len(k.Entity))
		}
		for _, k := range sc.Examples {
			line := "    " + k.Entity
			if r.KeySchema.SK != nil && k.SK != nil {
				line = fmt.Sprintf("    %-*s  %s=%s", width, k.Entity, r.KeySchema.SK.Name, keyValueText(r.KeySchema.SK.Type, *k.SK))
			}
			out = append(out, staleLine{line, ""})
		}
		if n := sc.Items - int64(len(sc.Examples)); n > 0 && len(sc.Examples) > 0 {
			out = append(out, staleLine{fmt.Sprintf("    … and %s more in this collection", render.Thousands(n)), ""})
		}
	}
	if n := r.StaleCollections - int64(len(r.StaleByCollection)); n > 0 {
		out = append(out, staleLine{fmt.Sprintf("… and %s more %s (the first %d by key are listed)", render.Thousands(n), plural(n, "collection", "collections"), len(r.StaleByCollection)), ""})
	}
	return out
}

func (s section) more() int64 { return s.total - int64(len(s.items)) }

// ANSI colours for the text report on a terminal.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
)

type painter bool

func (p painter) paint(code, s string) string {
	if !p {
		return s
	}
	return code + s + ansiReset
}

func opColour(op string) string {
	switch op {
	case OpAdd:
		return ansiGreen
	case OpRemove:
		return ansiRed
	}
	return ansiYellow
}

func opMark(op string) string {
	switch op {
	case OpAdd:
		return "+"
	case OpRemove:
		return "-"
	}
	return "~"
}

func classColour(class string) string {
	switch class {
	case ClassCreate:
		return ansiGreen
	case ClassStale:
		return ansiRed
	}
	return ansiYellow
}

// WriteText writes the report for a terminal, with ANSI colours when
// colour is set.
func (r *Report) WriteText(w io.Writer, colour bool) error {
	p := painter(colour)
	ew := render.NewWriter(w)
	lead, detail := r.verdict()
	ew.Printf("%s: %s: %s\n", r.Command, p.paint(ansiBold, lead), detail)
	ew.Printf("table %s (%s)", r.Table, r.keySchemaText())
	if r.Source != "" {
		ew.Printf(", source %s", r.Source)
	}
	ew.Printf("\n")
	if r.Snapshot != "" {
		ew.Printf("snapshot: %s\n", r.Snapshot)
	}
	if note := r.sampleNote(); note != "" {
		ew.Printf("%s\n", note)
	}
	ew.Printf("%s\n", r.sweepNote())
	ew.Printf("\n")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ENTITY\tROWS SEEN\tROWS CHECKED\tCREATE\tUPDATE\tUNCHANGED\tSTALE\tROW ERRORS\t")
	for _, e := range append(append([]EntityCounts{}, r.Entities...), EntityCounts{Entity: "total", Counts: r.Totals}) {
		c := e.Counts
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", e.Entity, c.RowsSeen, c.RowsSampled, c.Create, c.Update, c.Unchanged, c.Stale, c.RowErrors)
	}
	tw.Flush()
	if r.DuplicateKeys > 0 {
		ew.Printf("%d items share their key with another item (migrate would reject them as collisions)\n", r.DuplicateKeys)
	}
	for _, s := range r.sections() {
		if s.total == 0 {
			continue
		}
		ew.Printf("\n%s\n", p.paint(ansiBold+classColour(s.class), s.title))
		if s.class == ClassStale {
			for _, line := range r.staleLines() {
				text := line.text
				if line.colour != "" {
					text = p.paint(line.colour, text)
				}
				ew.Printf("  %s\n", text)
			}
			continue
		}
		for _, f := range s.items {
			ew.Printf("  %s %s  %s\n", p.paint(classColour(s.class), s.mark), f.Entity, r.keyText(f.Key))
			width := 0
			for _, ch := range f.Changes {
				width = max(width, len(ch.Attribute))
			}
			for _, ch := range f.Changes {
				ew.Printf("      %s %-*s  %s\n", p.paint(opColour(ch.Op), opMark(ch.Op)), width, ch.Attribute, changeText(ch))
			}
		}
		if n := s.more(); n > 0 {
			ew.Printf("  … and %d more (the first %d by key are listed)\n", n, len(s.items))
		}
	}
	if len(r.RowErrors) > 0 {
		ew.Printf("\n%s\n", p.paint(ansiBold, r.rowErrorsTitle()))
		for _, re := range r.RowErrors {
			ew.Printf("  %s\n", rowErrorText(re))
		}
		if n := r.Totals.RowErrors - int64(len(r.RowErrors)); n > 0 {
			ew.Printf("  … and %d more\n", n)
		}
	}
	return ew.Err()
}

func (r *Report) keySchemaText() string {
	s := r.KeySchema.PK.Name + " " + r.KeySchema.PK.Type
	if r.KeySchema.SK != nil {
		s += ", " + r.KeySchema.SK.Name + " " + r.KeySchema.SK.Type
	}
	return s
}

// changeText is "old → new", "new" or "old".
func changeText(ch Change) string {
	switch ch.Op {
	case OpAdd:
		return clip(ch.New.Text())
	case OpRemove:
		return clip(ch.Old.Text())
	}
	return clip(ch.Old.Text()) + " → " + clip(ch.New.Text())
}

func (r *Report) rowErrorsTitle() string {
	if r.Totals.RowErrors == 1 {
		return "1 row cannot become an item"
	}
	return fmt.Sprintf("%d rows cannot become items", r.Totals.RowErrors)
}

func rowErrorText(re RowError) string {
	s := re.Entity + " " + re.SourceKey + ": "
	if re.Attribute != "" {
		s += re.Attribute + ": "
	}
	return s + re.Reason
}

// WriteMarkdown writes the report for a pull-request comment: the verdict,
// the counts table and the examples as collapsed diff blocks.
func (r *Report) WriteMarkdown(w io.Writer) error {
	ew := render.NewWriter(w)
	ew.Printf("### dynafold %s: table `%s`\n\n", r.Command, r.Table)
	lead, detail := r.verdict()
	ew.Printf("**%s:** %s\n\n", render.Markdown(lead), render.Markdown(detail))
	if note := r.sampleNote(); note != "" {
		ew.Printf("_%s_\n\n", render.Markdown(note))
	}
	ew.Printf("_%s_\n\n", render.Markdown(r.sweepNote()))
	ew.Printf("| entity | rows seen | rows checked | create | update | unchanged | stale | row errors |\n")
	ew.Printf("|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, e := range r.Entities {
		c := e.Counts
		ew.Printf("| %s | %d | %d | %d | %d | %d | %d | %d |\n", render.Markdown(e.Entity), c.RowsSeen, c.RowsSampled, c.Create, c.Update, c.Unchanged, c.Stale, c.RowErrors)
	}
	c := r.Totals
	ew.Printf("| **total** | %d | %d | %d | %d | %d | %d | %d |\n", c.RowsSeen, c.RowsSampled, c.Create, c.Update, c.Unchanged, c.Stale, c.RowErrors)
	if r.DuplicateKeys > 0 {
		ew.Printf("\n%d items share their key with another item (migrate would reject them as collisions).\n", r.DuplicateKeys)
	}
	for _, s := range r.sections() {
		if s.total == 0 {
			continue
		}
		var body strings.Builder
		if s.class == ClassStale {
			for _, line := range r.staleLines() {
				fmt.Fprintf(&body, "- %s\n", line.text)
			}
		}
		for _, f := range s.items {
			if s.class == ClassStale {
				break // listed by collection above
			}
			head := f.Entity + " " + r.keyText(f.Key)
			switch s.class {
			case ClassUpdate:
				fmt.Fprintf(&body, "@@ %s @@\n", head)
			default:
				fmt.Fprintf(&body, "%s %s\n", s.mark, head)
			}
			for _, ch := range f.Changes {
				if ch.Old != nil {
					fmt.Fprintf(&body, "-     %s: %s\n", ch.Attribute, clip(ch.Old.Text()))
				}
				if ch.New != nil {
					fmt.Fprintf(&body, "+     %s: %s\n", ch.Attribute, clip(ch.New.Text()))
				}
			}
		}
		ew.Printf("\n<details><summary>%s</summary>\n\n", s.title)
		fence := codeFence(body.String())
		ew.Printf("%sdiff\n%s%s\n", fence, body.String(), fence)
		if n := s.more(); n > 0 && s.class != ClassStale {
			ew.Printf("\n… and %d more (the first %d by key are listed).\n", n, len(s.items))
		}
		ew.Printf("\n</details>\n")
	}
	if len(r.RowErrors) > 0 {
		ew.Printf("\n<details><summary>%s</summary>\n\n", r.rowErrorsTitle())
		for _, re := range r.RowErrors {
			ew.Printf("- %s\n", render.Markdown(rowErrorText(re)))
		}
		if n := r.Totals.RowErrors - int64(len(r.RowErrors)); n > 0 {
			ew.Printf("- … and %d more\n", n)
		}
		ew.Printf("\n</details>\n")
	}
	return ew.Err()
}

// codeFence returns a backtick fence longer than any run of backticks in
// body, so that no value can end the block early.
func codeFence(body string) string {
	longest, run := 0, 0
	for _, c := range body {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
