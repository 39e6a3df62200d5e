package mapping

import (
	"strings"

	"github.com/dynafold/dynafold/source"
)

// compileWhere turns `where:` into SQL pieces and bound arguments.
func (c *entityCompiler) compileWhere(q *source.Query) {
	w := c.spec.Where
	if strings.TrimSpace(w) == "" {
		return
	}
	path := c.path + ".where"
	for len(w) > 0 {
		i := strings.Index(w, "${")
		if i < 0 {
			q.Where = append(q.Where, source.WherePart{SQL: w})
			break
		}
		if i > 0 {
			q.Where = append(q.Where, source.WherePart{SQL: w[:i]})
		}
		end := strings.IndexByte(w[i:], '}')
		if end < 0 {
			c.errs.add(path, "unterminated \"${\"")
			return
		}
		name := strings.TrimSpace(w[i+2 : i+end])
		if !strings.HasPrefix(name, "var.") {
			c.errs.add(path, "only ${var.NAME} placeholders may appear in where:, found ${%s}", name)
			return
		}
		name = strings.TrimPrefix(name, "var.")
		val, ok := c.plan.Vars[name]
		if !ok && (!c.static || c.requireVars) && !c.unboundVars {
			c.errs.add(path, "uses ${var.%s} but it has no value; pass --var %s=VALUE or set vars.%s", name, name, name)
			return
		}
		// Without the source (table create, patterns, dump) no row is
		// read, so an unbound variable is only checked when reading.
		q.Where = append(q.Where, source.WherePart{Arg: &val})
		w = w[i+end+1:]
	}
}

func (c *entityCompiler) condition(path string, w *Condition) *condPlan {
	if w.Column == "" {
		c.errs.add(path+".column", "missing the column the condition tests")
		return nil
	}
	n := 0
	if w.Equals != nil {
		n++
	}
	if len(w.In) > 0 {
		n++
	}
	if w.NotNull {
		n++
	}
	if w.IsNull {
		n++
	}
	switch {
	case n == 0:
		// equals: null decodes as no equals: at all.
		c.errs.add(path, "set one of equals:, in:, not_null: true or is_null: true (to test for NULL, write is_null: true, not equals: null)")
		return nil
	case n > 1:
		c.errs.add(path, "set exactly one of equals:, in:, not_null: true or is_null: true")
		return nil
	}
	i, _, found := c.column(path+".column", ParseColumnName(w.Column))
	if !found {
		return nil
	}
	cp := &condPlan{col: i, equals: w.Equals, notNull: w.NotNull, isNull: w.IsNull}
	if len(w.In) > 0 {
		cp.in = map[string]bool{}
		for _, v := range w.In {
			cp.in[v] = true
		}
	}
	return cp
}
