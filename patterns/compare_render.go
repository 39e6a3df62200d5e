package patterns

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynafold/dynafold/internal/render"
	"github.com/dynafold/dynafold/value"
	"github.com/dynafold/dynafold/verify"
)

// maxRowsShown bounds the rows and items listed per mismatch in text and
// Markdown; the JSON report has them all.
const maxRowsShown = 10

// cliCommands are the AWS CLI commands that run a comparison's queries.
func cliCommands(qs []*dynamodb.QueryInput, consistent bool) []string {
	out := make([]string, len(qs))
	for i, in := range qs {
		names, _ := json.Marshal(in.ExpressionAttributeNames)
		vals := map[string]*verify.Value{}
		for k, v := range in.ExpressionAttributeValues {
			vals[k] = &verify.Value{AV: v}
		}
		values, _ := json.Marshal(vals)
		parts := []string{"aws dynamodb query", "--table-name " + shellQuote(aws.ToString(in.TableName))}
		if in.IndexName != nil {
			parts = append(parts, "--index-name "+shellQuote(*in.IndexName))
		}
		parts = append(parts,
			"--key-condition-expression "+shellQuote(aws.ToString(in.KeyConditionExpression)),
			"--expression-attribute-names "+shellQuote(string(names)),
			"--expression-attribute-values "+shellQuote(string(values)))
		if consistent {
			parts = append(parts, "--consistent-read")
		}
		if in.ScanIndexForward != nil && !*in.ScanIndexForward {
			parts = append(parts, "--no-scan-index-forward")
		}
		out[i] = strings.Join(parts, " ")
	}
	return out
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// WriteText writes the human report.
func (r *CompareReport) WriteText(w io.Writer, color bool) {
	mark := func(ok bool, word string) string {
		switch {
		case ok && color:
			return "\x1b[32m" + word + "\x1b[0m"
		case color:
			return "\x1b[31m" + word + "\x1b[0m"
		}
		return word
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	for _, p := range r.Patterns {
		if p.Expect != nil {
			word := "OK"
			if !p.OK {
				word = "FAILED"
			}
			fmt.Fprintf(w, "%s  %s (no sql:, expect: checked)\n", mark(p.OK, word), p.Name)
			if p.Expect.Error != "" {
				fmt.Fprintf(w, "  error: %s\n", p.Expect.Error)
			}
			for _, c := range p.Expect.Checks {
				if !c.OK {
					fmt.Fprintf(w, "  ✗ %s\n", c.failed())
				}
			}
			continue
		}
		if p.OK {
			fmt.Fprintf(w, "%s  %s: %s, all agree\n", mark(true, "OK"), p.Name, plural(p.Comparisons, "comparison"))
			continue
		}
		fmt.Fprintf(w, "%s  %s: %d of %s differ\n", mark(false, "MISMATCH"), p.Name, p.Mismatches, plural(p.Comparisons, "comparison"))
		fmt.Fprintf(w, "  query: %s\n", p.Query)
		for _, m := range p.Examples {
			m.writeText(w)
		}
		if more := p.Mismatches - len(p.Examples); more > 0 {
			fmt.Fprintf(w, "  … %d more mismatches (the JSON report has the first %d)\n", more, maxExamples)
		}
	}
	fmt.Fprintf(w, "%s, %d mismatched, on table %s (%s)\n", plural(r.Comparisons, "comparison"), r.Mismatches, r.Table, r.Driver)
	if r.Failed > 0 {
		fmt.Fprintf(w, "%d patterns without sql: fail their expectations\n", r.Failed)
	}
}

func (m *Mismatch) writeText(w io.Writer) {
	fmt.Fprintf(w, "  parameters %s: %s, %s\n", m.paramText(), plural(m.Rows, "SQL row"), plural(m.Items, "item"))
	fmt.Fprintf(w, "    SQL:      %s\n", oneLine(m.SQL))
	for _, b := range m.Bound {
		fmt.Fprintf(w, "              %s = %s  (:%s)\n", b.Placeholder, valueText(b.Value), b.Param)
	}
	fmt.Fprintf(w, "    DynamoDB: %s\n", m.Query.Condition)
	for _, c := range m.Query.CLI {
		fmt.Fprintf(w, "              %s\n", c)
	}
	for i, row := range m.OnlyInSQL {
		if i == maxRowsShown {
			fmt.Fprintf(w, "    … %d more rows only in SQL\n", len(m.OnlyInSQL)-maxRowsShown)
			break
		}
		fmt.Fprintf(w, "    only in SQL:      %s\n", rowText(row))
	}
	for i, it := range m.OnlyInDynamoDB {
		if i == maxRowsShown {
			fmt.Fprintf(w, "    … %d more items only in DynamoDB\n", len(m.OnlyInDynamoDB)-maxRowsShown)
			break
		}
		fmt.Fprintf(w, "    only in DynamoDB: %s  %s\n", it.Key, attrsText(it.Attributes))
	}
	for _, p := range m.Differences {
		fmt.Fprintf(w, "    differs: %s (SQL row %d): %s\n", p.Key, p.Row, changesText(p.Changes))
	}
	if o := m.Order; o != nil {
		fmt.Fprintf(w, "    order differs at position %d: SQL %s, DynamoDB %s  %s\n", o.Position, attrsText(o.SQL), o.Key, attrsText(o.DynamoDB))
	}
}

func (m *Mismatch) paramText() string {
	if len(m.Params) == 0 {
		return "(none)"
	}
	names := make([]string, 0, len(m.Params))
	for n := range m.Params {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + valueText(m.Params[n])
	}
	return strings.Join(parts, ", ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func rowText(row map[string]value.Value) string {
	names := make([]string, 0, len(row))
	for n := range row {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ": " + valueText(row[n])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func attrsText(attrs map[string]*verify.Value) string {
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ": " + attrs[n].Text()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func changesText(cs []verify.Change) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		switch c.Op {
		case verify.OpAdd:
			parts[i] = fmt.Sprintf("%s: absent in DynamoDB, SQL gives %s", c.Attribute, c.New.Text())
		case verify.OpRemove:
			parts[i] = fmt.Sprintf("%s: DynamoDB has %s, SQL gives none (NULL)", c.Attribute, c.Old.Text())
		default:
			parts[i] = fmt.Sprintf("%s: DynamoDB %s, SQL %s", c.Attribute, c.Old.Text(), c.New.Text())
		}
	}
	return strings.Join(parts, "; ")
}

// WriteMarkdown writes a report ready for a pull request.
func (r *CompareReport) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "### Access patterns on `%s` compared with %s: %s, %s\n\n", r.Table, r.Driver, plural(r.Comparisons, "comparison"), plural(r.Mismatches, "mismatche"))
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "> warning: %s\n\n", warn)
	}
	fmt.Fprintln(w, "| pattern | query | comparisons | mismatches | result |")
	fmt.Fprintln(w, "|---|---|---:|---:|---|")
	for _, p := range r.Patterns {
		result := "✅"
		switch {
		case p.Expect != nil && !p.OK:
			result = "❌ expect: fails"
		case p.Expect != nil:
			result = "✅ expect: holds (no sql:)"
		case !p.OK:
			result = "❌"
		}
		fmt.Fprintf(w, "| %s | `%s` | %d | %d | %s |\n", render.Markdown(p.Name), p.Query, p.Comparisons, p.Mismatches, result)
	}
	for _, p := range r.Patterns {
		if len(p.Examples) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n#### %s\n", render.Markdown(p.Name))
		for _, m := range p.Examples {
			fmt.Fprintf(w, "\nParameters %s: %s, %s\n\n```\n", render.Markdown(m.paramText()), plural(m.Rows, "SQL row"), plural(m.Items, "item"))
			m.writeText(w)
			fmt.Fprintln(w, "```")
		}
	}
}
