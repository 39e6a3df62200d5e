package reverse

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// shape is what the text of one ${…} expression can look like, and
// whether the column's value can be had back from it.
type shape struct {
	// fixed is the text's width in bytes when every value has the same
	// width (pad:N, iso, date, a date), else 0.
	fixed int
	// alphabet holds every byte the text can contain; "" means any.
	alphabet string
	// lossy, when set, says what the expression loses.
	lossy   string
	caveats []string
}

// The alphabets of the text forms value.Text gives each kind.
const (
	digits       = "0123456789"
	intBytes     = "-" + digits
	decimalBytes = "+-.eENaInfity" + digits // PostgreSQL's numeric has NaN and ±Infinity
	floatBytes   = "+-.eEInfNa" + digits
	boolBytes    = "truefals"
	hexBytes     = "abcdef" + digits
	dateBytes    = "-" + digits
	tsBytes      = "-:.TZ" + digits
)

// textShape is the shape of a column's value as template text, before
// any transform.
func textShape(kind value.Kind, col *source.Column, driver string) shape {
	switch kind {
	case value.Int:
		return shape{alphabet: intBytes}
	case value.Decimal:
		return shape{alphabet: decimalBytes}
	case value.Float:
		return shape{alphabet: floatBytes}
	case value.Bool:
		return shape{alphabet: boolBytes}
	case value.Bytes:
		return shape{alphabet: hexBytes}
	case value.Date:
		return shape{fixed: len(value.DateLayout), alphabet: dateBytes}
	case value.Timestamp:
		s := shape{fixed: len(value.TimestampLayout), alphabet: tsBytes}
		if p := fraction(col, driver); p > 3 {
			s.caveats = append(s.caveats, millisCaveat(p))
		}
		return s
	case value.List:
		return shape{lossy: "an array as text (\"[a,b]\") cannot be cut back into its elements"}
	}
	return shape{} // text, JSON, or unknown without the schema
}

// freeText reports whether a kind's text can hold letters of either
// case, which lower and upper fold.
func freeText(kind value.Kind, col *source.Column) bool {
	switch kind {
	case value.String, value.JSON, value.Null:
		// A uuid prints in one case and reads in both: folding loses nothing.
		return col == nil || !strings.EqualFold(col.DBType, "uuid")
	}
	return false
}

// exprShape is the shape of ${col|t1|t2…}.
func exprShape(kind value.Kind, col *source.Column, trs []mapping.Transform, driver string) shape {
	s := textShape(kind, col, driver)
	free := freeText(kind, col)
	for _, tr := range trs {
		name := "|" + tr.String()
		switch tr.Name {
		case "lower", "upper":
			if free && s.lossy == "" {
				s.lossy = name + " folds the case of the text"
			}
		case "pad":
			s = shape{fixed: tr.Arg, alphabet: digits, lossy: s.lossy, caveats: s.caveats}
			if kind == value.String || kind == value.Null {
				s.lossy = orText(s.lossy, name+" on a text column drops the text's own leading zeros (\"007\" and \"7\" pad alike)")
			}
		case "iso":
			s = shape{fixed: len(value.TimestampLayout), alphabet: tsBytes, lossy: s.lossy, caveats: s.caveats}
		case "date":
			if kind == value.Timestamp {
				s.lossy = orText(s.lossy, name+" keeps the calendar date and drops the time of day")
			}
			s = shape{fixed: len(value.DateLayout), alphabet: dateBytes, lossy: s.lossy}
		case "epoch":
			if kind == value.Timestamp {
				if p := fraction(col, driver); p > 0 {
					s.caveats = []string{secondsCaveat(p)}
				} else {
					s.caveats = nil
				}
			}
			s = shape{alphabet: intBytes, lossy: s.lossy, caveats: s.caveats}
		case "shard":
			s = shape{alphabet: digits, lossy: orText(s.lossy, name+" is a hash bucket of the value")}
		}
		free = false
	}
	return s
}

func orText(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var precisionRE = regexp.MustCompile(`\((\d)\)`)

// fraction is the number of fractional-second digits a time column keeps:
// the "(N)" of its type, else the engine's default (PostgreSQL 6, MySQL
// 0). Unknown (no schema): 6, the cautious guess.
func fraction(col *source.Column, driver string) int {
	if col == nil {
		return 6
	}
	if m := precisionRE.FindStringSubmatch(col.DBType); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	if strings.HasPrefix(strings.ToLower(col.DBType), "date") && !strings.HasPrefix(strings.ToLower(col.DBType), "datetime") {
		return 0
	}
	if driver == "mysql" {
		return 0
	}
	return 6
}

func millisCaveat(p int) string {
	return fmt.Sprintf("kept to milliseconds: the column keeps %d fractional digits, and a finer value comes back cut to milliseconds", p)
}

func secondsCaveat(p int) string {
	return fmt.Sprintf("kept to whole seconds: the column keeps %d fractional digits, and a fraction of a second does not come back", p)
}

// parseBack says, for each expression of a template, why its text cannot
// be cut out of a rendered value ("" when it can). The literal prefix and
// suffix are stripped; then expressions are cut from the left while each
// ends where the next literal begins (fixed width, or its text cannot
// contain the literal's first byte), and from the right likewise; what
// is left must be one expression.
func parseBack(parts []mapping.TemplatePart, shapes []shape) []string {
	var exprs []shape
	var names []string
	var seps []string // seps[i] is the literal between expression i and i+1
	lit := ""
	for _, p := range parts {
		if p.Expr == nil {
			lit += p.Lit
			continue
		}
		if len(exprs) > 0 {
			seps = append(seps, lit)
		}
		lit = ""
		exprs = append(exprs, shapes[len(exprs)])
		names = append(names, exprText(p.Expr))
	}
	out := make([]string, len(exprs))
	n := len(exprs)
	if n <= 1 {
		return out
	}
	i := 0
	for i < n-1 && cuts(exprs[i], seps[i], true) {
		i++
	}
	j := n - 1
	for j > i && cuts(exprs[j], seps[j-1], false) {
		j--
	}
	for k := i; k <= j && i < j; k++ {
		sep := seps[i]
		why := fmt.Sprintf("%s runs into %s", names[i], names[i+1])
		if sep != "" {
			why = fmt.Sprintf("the text of %s can contain %q, which also separates it from %s", names[i], sep, names[i+1])
		}
		out[k] = "the key parts cannot be cut apart again: " + why
	}
	return out
}

// cuts reports whether an expression's end (forward) or start (backward)
// is found without knowing its value.
func cuts(s shape, sep string, forward bool) bool {
	if s.fixed > 0 {
		return true
	}
	if sep == "" || s.alphabet == "" {
		return false
	}
	b := sep[0]
	if !forward {
		b = sep[len(sep)-1]
	}
	return !strings.ContainsRune(s.alphabet, rune(b))
}

func exprText(e *mapping.Expr) string {
	s := "${" + e.Ref.String()
	for _, t := range e.Transforms {
		s += "|" + t.String()
	}
	return s + "}"
}
