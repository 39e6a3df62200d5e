package reverse

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dynafold/dynafold/internal/render"
)

// Summary is the report's one-line verdict.
func (r *Report) Summary() string {
	if r.Reversible {
		return fmt.Sprintf("reversible: the rows of all %d entities can be rebuilt from their items", len(r.Entities))
	}
	n := len(r.Failures())
	bad := 0
	for _, e := range r.Entities {
		if !e.Reversible {
			bad++
		}
	}
	problems := "problems"
	if n == 1 {
		problems = "problem"
	}
	return fmt.Sprintf("not reversible: %d of %d entities cannot be rebuilt from their items (%d %s)", bad, len(r.Entities), n, problems)
}

func (e *Entity) heading() string {
	s := "entity " + e.Entity
	if e.Table != "" {
		s += " (table " + e.Table + ")"
	}
	if e.Reversible {
		return s + ": reversible"
	}
	return s + ": NOT reversible"
}

// WriteText writes the report for a terminal, each line indented by
// indent.
func (r *Report) WriteText(w io.Writer, indent string) error {
	ew := render.NewWriter(w)
	ew.Printf("%s%s\n", indent, r.Summary())
	for _, e := range r.Entities {
		ew.Printf("\n%s%s\n", indent, e.heading())
		in := indent + "  "
		if e.RecognizedBy != "" {
			ew.Printf("%sitems recognised by %s\n", in, e.RecognizedBy)
		}
		for _, p := range e.Problems {
			ew.Printf("%sPROBLEM %s: %s\n%s  fix: %s\n", in, p.Path, p.Reason, in, p.Fix)
		}
		writeColumnsText(ew, in, e.Columns)
		if len(e.Derived) > 0 {
			ew.Printf("%sderived, ignored on the way back:\n", in)
			for _, d := range e.Derived {
				ew.Printf("%s  %s: %s\n", in, derivedHolder(d), d.Why)
			}
		}
		for _, n := range e.Nested {
			state := "reversible"
			if !n.Reversible {
				state = "NOT reversible"
			}
			ew.Printf("%snested %s (table %s, %s, overflow %s): %s\n", in, n.Attribute, n.Table, n.Form, n.Overflow, state)
			for _, p := range n.Problems {
				ew.Printf("%s  PROBLEM %s: %s\n%s    fix: %s\n", in, p.Path, p.Reason, in, p.Fix)
			}
			writeColumnsText(ew, in+"  ", n.Columns)
			for _, note := range n.Notes {
				ew.Printf("%s  note: %s\n", in, note)
			}
		}
		for _, note := range e.Notes {
			ew.Printf("%snote: %s\n", in, note)
		}
	}
	return ew.Err()
}

func writeColumnsText(ew *render.Writer, in string, cols []Column) {
	if len(cols) == 0 {
		return
	}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	for _, c := range cols {
		status := string(c.Status)
		if c.Status == Irreversible {
			status = "IRREVERSIBLE"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\n", in, c.Column, status, columnText(c))
	}
	tw.Flush()
	for _, c := range cols {
		if c.Fix != "" {
			ew.Printf("%sfix %s: %s\n", in, c.Column, c.Fix)
		}
	}
}

// columnText is what a column's line says after its status.
func columnText(c Column) string {
	s := c.Reason
	if c.Status == Owned {
		s = c.Owner
		if len(c.Also) > 0 {
			s += "; also " + strings.Join(c.Also, ", ")
		}
	}
	for _, cv := range c.Caveats {
		s += "; " + cv
	}
	return s
}

func derivedHolder(d Derived) string {
	if d.Source == "" {
		return d.Holder
	}
	return d.Holder + " ← " + d.Source
}

// WriteMarkdown writes the report as a Markdown section, its headings
// at level.
func (r *Report) WriteMarkdown(w io.Writer, level int) error {
	h := strings.Repeat("#", level)
	ew := render.NewWriter(w)
	ew.Printf("%s Reversibility\n\n**%s**.\n\n", h, render.Markdown(r.Summary()))
	for _, e := range r.Entities {
		ew.Printf("%s# %s\n\n", h, render.Markdown(e.heading()))
		if e.RecognizedBy != "" {
			ew.Printf("Items recognised by %s.\n\n", code(e.RecognizedBy))
		}
		for _, p := range e.Problems {
			ew.Printf("- **Problem** at %s: %s Fix: %s.\n", code(p.Path), render.Markdown(p.Reason)+".", render.Markdown(p.Fix))
		}
		if len(e.Problems) > 0 {
			ew.Printf("\n")
		}
		writeColumnsMarkdown(ew, e.Columns)
		if len(e.Derived) > 0 {
			ew.Printf("Derived, ignored on the way back:\n\n")
			for _, d := range e.Derived {
				ew.Printf("- %s: %s.\n", code(derivedHolder(d)), render.Markdown(d.Why))
			}
			ew.Printf("\n")
		}
		for _, n := range e.Nested {
			state := "reversible"
			if !n.Reversible {
				state = "**not reversible**"
			}
			ew.Printf("Nested %s (table %s, %s, overflow %s): %s.\n\n", code(n.Attribute), code(n.Table), n.Form, n.Overflow, state)
			for _, p := range n.Problems {
				ew.Printf("- **Problem** at %s: %s Fix: %s.\n", code(p.Path), render.Markdown(p.Reason)+".", render.Markdown(p.Fix))
			}
			writeColumnsMarkdown(ew, n.Columns)
			for _, note := range n.Notes {
				ew.Printf("- %s.\n", render.Markdown(note))
			}
			if len(n.Notes) > 0 {
				ew.Printf("\n")
			}
		}
		for _, note := range e.Notes {
			ew.Printf("- %s.\n", render.Markdown(note))
		}
		if len(e.Notes) > 0 {
			ew.Printf("\n")
		}
	}
	return ew.Err()
}

func writeColumnsMarkdown(ew *render.Writer, cols []Column) {
	if len(cols) == 0 {
		return
	}
	ew.Printf("| column | type | status | owner, or why |\n|---|---|---|---|\n")
	for _, c := range cols {
		status := string(c.Status)
		if c.Status == Irreversible {
			status = "**irreversible**"
		}
		text := render.Markdown(columnText(c))
		if c.Fix != "" {
			text += ". Fix: " + render.Markdown(c.Fix)
		}
		ew.Printf("| %s | %s | %s | %s |\n", code(c.Column), render.Markdown(c.Type), status, text)
	}
	ew.Printf("\n")
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}
