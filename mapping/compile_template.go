package mapping

import "github.com/dynafold/dynafold/value"

// template parses and resolves a template, returning the kind of its
// value when it is a single expression.
func (c *entityCompiler) template(path, src string) (*Template, value.Kind, bool) {
	t, err := ParseTemplate(src)
	if err != nil {
		c.errs.add(path, "bad template %q: %v", src, err)
		return nil, 0, false
	}
	kind := value.String
	ok := true
	for _, e := range t.Exprs() {
		i, k, found := c.column(path, e.Ref)
		if !found {
			ok = false
			continue
		}
		e.col = i
		for _, tr := range e.Transforms {
			if k == value.Null { // static validation: kind unknown
				k = tr.resultKind()
				continue
			}
			if err := tr.check(k); err != nil {
				c.errs.add(path, "in %q: %v (column %s is %s)", src, err, e.Ref, c.kindName(i))
				ok = false
				break
			}
			k = tr.resultKind()
		}
		if k == value.List && len(t.parts) > 1 {
			c.errs.add(path, "column %s is an array and cannot be part of a text template", e.Ref)
			ok = false
		}
		kind = k
	}
	if _, single := t.Single(); !single {
		kind = value.String
	}
	return t, kind, ok
}

func (c *entityCompiler) kindName(i int) string {
	return c.kinds[i].String()
}

// checkKeyKind rejects, before any row is read, a key template whose value
// can never have the key attribute's type.
func (c *entityCompiler) checkKeyKind(path string, t *Template, k value.Kind, want AttrType) bool {
	if k == value.Null {
		return true // static validation: kind unknown
	}
	switch want {
	case TypeN:
		if _, single := t.Single(); !single {
			// Text with literals can still be numeric ("${a}${b}"); checked per row.
			return true
		}
		switch k {
		case value.Int, value.Decimal, value.Float, value.String, value.Timestamp, value.Date:
			return true
		}
	case TypeB:
		if k == value.Bytes || k == value.String {
			return true
		}
	default:
		if k != value.List && k != value.JSON && k != value.Bytes {
			return true
		}
	}
	c.errs.add(path, "template %q gives %s values, which cannot be a %s key", t.src, k, want)
	return false
}
