package mapping

import (
	"fmt"
	"strings"

	"github.com/dynafold/dynafold/value"
)

// Template is a parsed key or attribute template: literal text and
// ${column|transform|…} expressions. "$$" writes a literal "$".
//
//	SERVER#${id|lower}
//	${server.portfolio_id}#${server_id}
//	REPORT#${reported_at|iso}
//	CONTESTANT#${contestant_id}#${id|shard:10}
type Template struct {
	src   string
	parts []tpart
}

type tpart struct {
	lit  string
	expr *Expr
}

// Expr is one ${…} expression.
type Expr struct {
	// Ref is the column: Alias "" for the entity's own table.
	Ref        ColumnName
	Transforms []Transform
	// col is the position of Ref in the row, set by Compile.
	col int
}

// ColumnName is "name" or "alias.name".
type ColumnName struct {
	Alias string
	Name  string
}

func (c ColumnName) String() string {
	if c.Alias == "" {
		return c.Name
	}
	return c.Alias + "." + c.Name
}

// ParseColumnName splits "alias.name".
func ParseColumnName(s string) ColumnName {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return ColumnName{Alias: s[:i], Name: s[i+1:]}
	}
	return ColumnName{Name: s}
}

// ParseTemplate parses template text. Errors describe the position.
func ParseTemplate(src string) (*Template, error) {
	t := &Template{src: src}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, tpart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(src); {
		c := src[i]
		if c != '$' {
			lit.WriteByte(c)
			i++
			continue
		}
		if i+1 < len(src) && src[i+1] == '$' {
			lit.WriteByte('$')
			i += 2
			continue
		}
		if i+1 >= len(src) || src[i+1] != '{' {
			return nil, fmt.Errorf("a lone \"$\" at offset %d; write \"$$\" for a literal dollar sign or ${column} for a value", i)
		}
		end := strings.IndexByte(src[i+2:], '}')
		if end < 0 {
			return nil, fmt.Errorf("unterminated \"${\" at offset %d", i)
		}
		body := src[i+2 : i+2+end]
		e, err := parseExpr(body)
		if err != nil {
			return nil, fmt.Errorf("in \"${%s}\": %w", body, err)
		}
		flush()
		t.parts = append(t.parts, tpart{expr: e})
		i += end + 3
	}
	flush()
	return t, nil
}

func parseExpr(body string) (*Expr, error) {
	fields := strings.Split(body, "|")
	ref := strings.TrimSpace(fields[0])
	if ref == "" {
		return nil, fmt.Errorf("empty column name")
	}
	if strings.ContainsAny(ref, "${ \t") {
		return nil, fmt.Errorf("invalid column name %q", ref)
	}
	e := &Expr{Ref: ParseColumnName(ref)}
	if strings.HasPrefix(ref, ".") || strings.HasSuffix(ref, ".") || strings.Count(ref, ".") > 1 {
		return nil, fmt.Errorf("invalid column name %q", ref)
	}
	for _, f := range fields[1:] {
		tr, err := parseTransform(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		e.Transforms = append(e.Transforms, tr)
	}
	return e, nil
}

// String returns the template's source text.
func (t *Template) String() string { return t.src }

// Exprs returns the template's expressions in order.
func (t *Template) Exprs() []*Expr {
	var out []*Expr
	for _, p := range t.parts {
		if p.expr != nil {
			out = append(out, p.expr)
		}
	}
	return out
}

// Single returns the expression when the template is exactly one ${…}
// with no literal text, so that its value keeps its type (a Number stays a
// Number).
func (t *Template) Single() (*Expr, bool) {
	if len(t.parts) == 1 && t.parts[0].expr != nil {
		return t.parts[0].expr, true
	}
	return nil, false
}

// Literal returns the constant text when the template has no expressions.
func (t *Template) Literal() (string, bool) {
	if len(t.parts) == 0 {
		return "", true
	}
	if len(t.parts) == 1 && t.parts[0].expr == nil {
		return t.parts[0].lit, true
	}
	return "", false
}

// Prefix returns the literal text before the first expression: the part
// of a key that distinguishes one entity's items from another's.
func (t *Template) Prefix() string {
	if len(t.parts) > 0 && t.parts[0].expr == nil {
		return t.parts[0].lit
	}
	return ""
}

// Eval computes the expression on a row. ok is false when the value is
// NULL, which makes the whole template NULL (the sparse rule).
func (e *Expr) Eval(row value.Row) (v value.Value, ok bool, err error) {
	v = row[e.col]
	if v.IsNull() {
		return v, false, nil
	}
	for _, tr := range e.Transforms {
		if v, err = tr.apply(v); err != nil {
			return v, false, fmt.Errorf("${%s|%s}: %w", e.Ref, tr, err)
		}
	}
	return v, true, nil
}

// Render computes the template as a string. ok is false when any value it
// references is NULL.
func (t *Template) Render(row value.Row) (s string, ok bool, err error) {
	if len(t.parts) == 1 {
		p := t.parts[0]
		if p.expr == nil {
			return p.lit, true, nil
		}
		v, ok, err := p.expr.Eval(row)
		if !ok || err != nil {
			return "", ok, err
		}
		return v.Text(), true, nil
	}
	var sb strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			sb.WriteString(p.lit)
			continue
		}
		v, ok, err := p.expr.Eval(row)
		if !ok || err != nil {
			return "", ok, err
		}
		sb.WriteString(v.Text())
	}
	return sb.String(), true, nil
}

// appendTo renders the template onto dst without intermediate strings. ok
// is false when a referenced value is NULL.
func (t *Template) appendTo(dst []byte, row value.Row) ([]byte, bool, error) {
	for _, p := range t.parts {
		if p.expr == nil {
			dst = append(dst, p.lit...)
			continue
		}
		var ok bool
		var err error
		dst, ok, err = p.expr.appendTo(dst, row)
		if !ok || err != nil {
			return dst, ok, err
		}
	}
	return dst, true, nil
}

// appendTo renders one expression onto dst. A trailing lower or upper is
// applied in place on ASCII text, the common case, instead of building a
// new string.
func (e *Expr) appendTo(dst []byte, row value.Row) ([]byte, bool, error) {
	v := row[e.col]
	if v.IsNull() {
		return dst, false, nil
	}
	trs := e.Transforms
	fold := ""
	if n := len(trs); n > 0 && (trs[n-1].Name == "lower" || trs[n-1].Name == "upper") {
		fold, trs = trs[n-1].Name, trs[:n-1]
	}
	for _, tr := range trs {
		var err error
		if v, err = tr.apply(v); err != nil {
			return dst, false, fmt.Errorf("${%s|%s}: %w", e.Ref, tr, err)
		}
	}
	start := len(dst)
	dst = value.AppendText(dst, v)
	if fold != "" {
		dst = foldCase(dst, start, fold == "upper")
	}
	return dst, true, nil
}

// foldCase changes the case of b[start:], in place when it is ASCII.
func foldCase(b []byte, start int, upper bool) []byte {
	seg := b[start:]
	for _, c := range seg {
		if c >= utf8RuneSelf {
			s := string(seg)
			if upper {
				s = strings.ToUpper(s)
			} else {
				s = strings.ToLower(s)
			}
			return append(b[:start], s...)
		}
	}
	for i, c := range seg {
		switch {
		case upper && 'a' <= c && c <= 'z':
			seg[i] = c - 'a' + 'A'
		case !upper && 'A' <= c && c <= 'Z':
			seg[i] = c - 'A' + 'a'
		}
	}
	return b
}

const utf8RuneSelf = 0x80
