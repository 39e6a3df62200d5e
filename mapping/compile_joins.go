package mapping

import (
	"fmt"
	"strings"

	"github.com/dynafold/dynafold/source"
)

// reversedOn explains a join's on: written {child_column: parent_column}
// when that is what it looks like: the key is a column of this entity's
// table, not the joined one, and the value a column of the joined table.
func (c *entityCompiler) reversedOn(joined *source.Table, key, val string) string {
	ref := ParseColumnName(val)
	if ref.Alias != "" || c.base == nil || joined.Column(ref.Name) == nil || c.base.Column(key) == nil {
		return ""
	}
	return fmt.Sprintf("written the wrong way round: on: pairs {parent_column: child_column}, the joined table's column first; "+
		"%q is a column of %s (this entity's table) and %q of %s (the joined table), so write on: {%s: %s}",
		key, c.base.Ref, ref.Name, joined.Ref, ref.Name, key)
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
			if t.Column(on.Key) == nil {
				if msg := c.reversedOn(t, on.Key, on.Value); msg != "" {
					c.errs.add(path+".on", "%s", msg)
					ok = false
					continue
				}
				c.errs.add(path+".on."+on.Key, "%s", c.unknown(t, on.Key))
				ok = false
				continue
			}
			ref := ParseColumnName(on.Value)
			if ref.Alias != "" && c.joins[ref.Alias] == nil {
				c.errs.add(path+".on."+on.Key, "%q refers to alias %q, which must be joined before %q", on.Value, ref.Alias, alias)
				ok = false
				continue
			}
			refTable := c.base
			if ref.Alias != "" {
				refTable = c.joins[ref.Alias]
			}
			if refTable.Column(ref.Name) == nil {
				c.errs.add(path+".on."+on.Key, "%s", c.unknown(refTable, ref.Name))
				ok = false
				continue
			}
			j.On = append(j.On, source.JoinOn{Column: on.Key, RefAlias: ref.Alias, RefColumn: ref.Name})
			joined = append(joined, on.Key)
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
