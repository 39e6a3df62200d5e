package patterns

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/dynafold/dynafold/internal/render"
)

// maxKeysShown bounds the keys listed per pattern in text and Markdown.
const maxKeysShown = 20

// WriteText writes the human report.
func (r *Report) WriteText(w io.Writer, color bool) {
	mark := func(ok bool) string {
		switch {
		case ok && color:
			return "\x1b[32mOK\x1b[0m"
		case ok:
			return "OK"
		case color:
			return "\x1b[31mFAILED\x1b[0m"
		}
		return "FAILED"
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	for _, p := range r.Patterns {
		fmt.Fprintf(w, "%s  %s\n", mark(p.OK), p.Name)
		if p.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", p.Error)
			continue
		}
		fmt.Fprintf(w, "  query: %s\n", p.Query)
		fmt.Fprintf(w, "  %s in %s, %s read capacity\n", plural(p.Count, "item"), plural(p.Pages, "page"), units(p.ConsumedCapacity))
		for i, k := range p.Keys {
			if i == maxKeysShown {
				fmt.Fprintf(w, "    … %d more\n", len(p.Keys)-maxKeysShown)
				break
			}
			fmt.Fprintf(w, "    %s\n", k)
		}
		for _, it := range p.Items {
			b, _ := json.Marshal(it)
			fmt.Fprintf(w, "    %s\n", b)
		}
		for _, c := range p.Checks {
			if c.OK {
				fmt.Fprintf(w, "  ✓ %s\n", c.held())
			} else {
				fmt.Fprintf(w, "  ✗ %s\n", c.failed())
			}
		}
	}
	fmt.Fprintf(w, "%d of %d patterns hold on table %s\n", r.Passed, r.Passed+r.Failed, r.Table)
}

// opText is how a count's comparison reads.
var opText = map[string]string{"=": "=", ">=": "≥", "<=": "≤"}

// held says what a check found when it held: a count with its bound
// ("count 9 ≥ 3"), anything else with what was returned.
func (c Check) held() string {
	if c.Op != "" {
		return fmt.Sprintf("%s %s %s %s", c.What, c.Got, opText[c.Op], c.Want)
	}
	return fmt.Sprintf("%s: %s", c.What, c.Got)
}

// failed says what a check found against what it wanted: "count 2, want
// ≥ 3" (an exact count: "count 8, want 9").
func (c Check) failed() string {
	switch c.Op {
	case "":
		return fmt.Sprintf("%s: want %s, got %s", c.What, c.Want, c.Got)
	case "=":
		return fmt.Sprintf("%s %s, want %s", c.What, c.Got, c.Want)
	}
	return fmt.Sprintf("%s %s, want %s %s", c.What, c.Got, opText[c.Op], c.Want)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func units(u float64) string {
	if u == 0 {
		return "no reported"
	}
	return fmt.Sprintf("%g units of", u)
}

// WriteMarkdown writes a report ready for a pull request.
func (r *Report) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "### Access patterns on `%s`: %d of %d hold\n\n", r.Table, r.Passed, r.Passed+r.Failed)
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "> warning: %s\n\n", warn)
	}
	fmt.Fprintln(w, "| pattern | query | items | pages | RCU | result |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---|")
	for _, p := range r.Patterns {
		result := "✅"
		if !p.OK {
			var failed []string
			for _, c := range p.Checks {
				if !c.OK {
					failed = append(failed, c.failed())
				}
			}
			if p.Error != "" {
				failed = append(failed, p.Error)
			}
			result = "❌ " + strings.Join(failed, "; ")
		}
		fmt.Fprintf(w, "| %s | `%s` | %d | %d | %g | %s |\n", render.Markdown(p.Name), p.Query, p.Count, p.Pages, p.ConsumedCapacity, render.Markdown(result))
	}
}
