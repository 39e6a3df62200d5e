package verify

import (
	"encoding/json"
	"fmt"
	"io"
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
// and its detail (the counts).
func (r *Report) verdict() (lead, detail string) {
	t := r.Totals
	counts := fmt.Sprintf("%d to create, %d to update, %d stale", t.Create, t.Update, t.Stale)
	switch {
	case r.Command == ModePrune:
		return fmt.Sprintf("deleted %d stale %s", r.Deleted, plural(r.Deleted, "item", "items")),
			fmt.Sprintf("%d touched %s swept", r.CollectionsSwept, plural(r.CollectionsSwept, "collection", "collections"))
	case r.Command == ModeDiff && r.InSync:
		return "nothing to change", fmt.Sprintf("%d %s unchanged, none stale", t.Unchanged, plural(t.Unchanged, "item", "items"))
	case r.Command == ModeDiff:
		return fmt.Sprintf("migrate would change %d %s", t.Differences(), plural(t.Differences(), "item", "items")),
			fmt.Sprintf("%s (stale items are deleted only by migrate --prune); %d unchanged", counts, t.Unchanged)
	case r.InSync:
		return "source and target agree", fmt.Sprintf("%d %s checked, none stale", t.Items, plural(t.Items, "item", "items"))
	}
	return "source and target differ", fmt.Sprintf("%s; %d unchanged", counts, t.Unchanged)
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
	return fmt.Sprintf("sample: %g%% of rows (seed %d), chosen by a hash of each row's primary key; %d of %d rows checked; "+
		"stale items are looked for only in the collections of checked rows",
		r.Sample.Fraction*100, r.Sample.Seed, r.Totals.RowsSampled, r.Totals.RowsSeen)
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
		{ClassStale, fmt.Sprintf("%d stale", t.Stale), "-", r.Examples.Stale, t.Stale},
	}
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
		for _, f := range s.items {
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
		if n := s.more(); n > 0 {
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
