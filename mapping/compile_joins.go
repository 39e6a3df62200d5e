package mapping

import (
	"strings"

	"github.com/dynafold/dynafold/source"
)

// onPair reads one pair of a join's on: {key: value}. Its canonical
// direction is {joined_column: column}, where column is the entity's
// ("server_id") or an earlier join's ("server.portfolio_id"); the
// reversed {column: joined_column} is read too when only it names
// existing columns, since either reads naturally to someone. When both
// directions name existing columns (a self-join: employee joined to
// employee on {employee_id: reports_to}), the canonical one is meant.
// ok is false when neither direction names existing columns.
func (c *entityCompiler) onPair(joined *source.Table, key, val string) (source.JoinOn, bool) {
	if ref, ok := c.onRef(val); ok && joined.Column(key) != nil {
		return source.JoinOn{Column: key, RefAlias: ref.Alias, RefColumn: ref.Name}, true
	}
	if ref, ok := c.onRef(key); ok && !strings.Contains(val, ".") && joined.Column(val) != nil {
		return source.JoinOn{Column: val, RefAlias: ref.Alias, RefColumn: ref.Name}, true
	}
	return source.JoinOn{}, false
}

// onRef resolves a column of the entity's table or of an earlier join.
func (c *entityCompiler) onRef(s string) (ColumnName, bool) {
	ref := ParseColumnName(s)
	t := c.base
	if ref.Alias != "" {
		t = c.joins[ref.Alias]
	}
	return ref, t != nil && t.Column(ref.Name) != nil
}

func (c *entityCompiler) compileJoins(q *source.Query) {
	for _, je := range c.spec.Join {
		path := c.path + ".join." + je.Key
		alias, spec := je.Key, je.Value
		if spec == nil || spec.From == "" {
			c.errs.add(path+".from", "missing the table to join")
			continue
		}
		if alias == source.BaseAlias || strings.ContainsAny(alias, ".${}| ") {
			c.errs.add(path, "%q cannot be a join alias", alias)
			continue
		}
		t := c.lookup(path+".from", spec.From)
		if t == nil {
			continue
		}
		if len(spec.On) == 0 {
			c.errs.add(path+".on", "missing the column pairing, e.g. on: {id: %s_id}", alias)
			continue
		}
		j := source.Join{Alias: alias, Table: t.Ref}
		var joined []string
		ok := true
		for _, on := range spec.On {
			if c.static {
				ref := ParseColumnName(on.Value)
				if ref.Alias != "" && c.joins[ref.Alias] == nil {
					c.errs.add(path+".on."+on.Key, "%q refers to alias %q, which must be joined before %q", on.Value, ref.Alias, alias)
					ok = false
				}
				continue
			}
			if jo, found := c.onPair(t, on.Key, on.Value); found {
				j.On = append(j.On, jo)
				joined = append(joined, jo.Column)
				continue
			}
			ok = false
			// Neither direction names existing columns: report the
			// canonical reading, {joined_column: column}.
			if t.Column(on.Key) == nil {
				c.errs.add(path+".on."+on.Key, "%s", c.unknown(t, on.Key))
				continue
			}
			ref := ParseColumnName(on.Value)
			if ref.Alias != "" && c.joins[ref.Alias] == nil {
				c.errs.add(path+".on."+on.Key, "%q refers to alias %q, which must be joined before %q", on.Value, ref.Alias, alias)
				continue
			}
			refTable := c.base
			if ref.Alias != "" {
				refTable = c.joins[ref.Alias]
			}
			c.errs.add(path+".on."+on.Key, "%s", c.unknown(refTable, ref.Name))
		}
		if ok && !c.static && !t.IsUnique(joined) {
			c.errs.add(path+".on", "joining %s on (%s) could match several rows per %s row; join on its primary key or a unique key", t.Ref, strings.Join(joined, ", "), c.name)
			ok = false
		}
		c.joins[alias] = t
		if ok {
			q.Joins = append(q.Joins, j)
		}
	}
}
