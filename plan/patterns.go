package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dynafold/dynafold/mapping"
)

// The checks of access patterns against the key rules: a query DynamoDB
// would reject (a sort-key condition on a table or index without a sort
// key, begins_with on a Number, a Number key compared with text), and a
// SQL meaning whose ORDER BY and compare.ordered disagree.

// The check names of access patterns.
const (
	checkPatternNoSortKey    = "pattern.no_sort_key"
	checkPatternBeginsNumber = "pattern.begins_with_number"
	checkPatternNotNumber    = "pattern.key_not_number"
	checkPatternOrderUnused  = "pattern.order_not_compared"
	checkPatternOrderMissing = "pattern.ordered_without_order_by"
)

// supersededPatternCheck is the check under which the mapping reports,
// without a name of their own, the first two problems above; patterns()
// reports them under their names instead.
const supersededPatternCheck = "pattern"

// patterns checks every access pattern.
func (l *linter) patterns() {
	var replaced []string
	for i, p := range l.p.Config.Patterns {
		if p == nil {
			continue
		}
		path := fmt.Sprintf("access_patterns[%d]", i)
		replaced = append(replaced, l.patternKeys(path, p)...)
		l.patternOrder(path, p)
	}
	l.fs = slices.DeleteFunc(l.fs, func(f Finding) bool {
		return f.Check == supersededPatternCheck && slices.Contains(replaced, f.Path)
	})
}

// patternKeys checks the pattern's key conditions against the key schema
// of the table or index it queries, and returns the paths it reported.
func (l *linter) patternKeys(path string, p *mapping.AccessPattern) []string {
	q := p.Query
	pk, sk, where := l.tbl.PK, l.tbl.SK, "the table"
	if q.Index != "" {
		ix := l.tbl.Index(q.Index)
		if ix == nil {
			return nil // the mapping's validation reports it
		}
		pk, sk, where = ix.PK, ix.SK, "index "+ix.Name
	}
	var reported []string
	conds := skConditions(q)
	if len(conds) > 0 && sk == nil {
		l.fs.add(Warning, Mapping, checkPatternNoSortKey, path+".query", "",
			"pattern %q has a sort-key condition (%s) but %s has no sort key, so DynamoDB rejects the query; drop the condition, or query an index whose sort key is the attribute",
			p.Name, conds[0].key, where)
		return append(reported, path+".query")
	}
	if pk.Type == mapping.TypeN && !numberOrTemplate(q.PK) {
		l.fs.add(Warning, Mapping, checkPatternNotNumber, path+".query.pk", "",
			"pattern %q gives %s's partition key %s, a Number, the text %q, so DynamoDB rejects the query; give a number",
			p.Name, where, pk.Name, q.PK)
		reported = append(reported, path+".query.pk")
	}
	if sk == nil || sk.Type != mapping.TypeN {
		return reported
	}
	for _, c := range conds {
		if c.key == "sk_begins_with" {
			l.fs.add(Warning, Mapping, checkPatternBeginsNumber, path+".query.sk_begins_with", "",
				"pattern %q uses begins_with on %s, whose sort key %s is a Number: DynamoDB allows begins_with only on String and Binary keys; use sk_between (or sk_ge and sk_lt) over the numbers the prefix stands for",
				p.Name, where, sk.Name)
			reported = append(reported, path+".query.sk_begins_with")
			continue
		}
		for _, v := range c.values {
			if !numberOrTemplate(v) {
				l.fs.add(Warning, Mapping, checkPatternNotNumber, path+".query."+c.key, "",
					"pattern %q compares %s's sort key %s, a Number, with the text %q, so DynamoDB rejects the query; give a number",
					p.Name, where, sk.Name, v)
				reported = append(reported, path+".query."+c.key)
				break
			}
		}
	}
	return reported
}

// skCondition is a sort-key condition of a query: its key in the file and
// its values.
type skCondition struct {
	key    string
	values []string
}

func skConditions(q mapping.PatternQuery) []skCondition {
	var out []skCondition
	for _, c := range []struct {
		key string
		v   *string
	}{{"sk", q.SKEquals}, {"sk_begins_with", q.SKBeginsWith}, {"sk_lt", q.SKLess}, {"sk_le", q.SKLessEq}, {"sk_gt", q.SKGreater}, {"sk_ge", q.SKGreaterEq}} {
		if c.v != nil {
			out = append(out, skCondition{c.key, []string{*c.v}})
		}
	}
	if q.SKBetween != nil {
		out = append(out, skCondition{"sk_between", q.SKBetween})
	}
	return out
}

// numberOrTemplate reports whether a key value can be a DynamoDB number: a
// number, or a text with ${…} whose value is known only when it runs.
func numberOrTemplate(s string) bool {
	if strings.Contains(s, "${") {
		return true
	}
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil
}

// patternOrder checks that a SQL meaning with ORDER BY is compared in
// order, and that an ordered comparison has an ORDER BY to compare with.
func (l *linter) patternOrder(path string, p *mapping.AccessPattern) {
	if p.SQL == nil || p.Compare == nil {
		return
	}
	var with, without []string
	for _, e := range []struct{ driver, text string }{{"postgres", p.SQL.Postgres}, {"mysql", p.SQL.MySQL}} {
		if e.text == "" {
			continue
		}
		if hasOrderBy(e.text, e.driver) {
			with = append(with, e.driver)
		} else {
			without = append(without, e.driver)
		}
	}
	switch {
	case !p.Compare.Ordered && len(with) > 0:
		l.fs.add(Warning, Mapping, checkPatternOrderUnused, path+".compare", "",
			"pattern %q's SQL%s has ORDER BY but compare: is not ordered, so its answers compare as multisets and a sort key that does not give the SQL's order goes unnoticed; add ordered: true to compare:, or drop the ORDER BY (or list %s under lint.ignore when the order does not matter)",
			p.Name, engines(with, without), checkPatternOrderUnused)
	case p.Compare.Ordered && len(without) > 0:
		l.fs.add(Warning, Mapping, checkPatternOrderMissing, path+".compare.ordered", "",
			"pattern %q is compared in order (ordered: true) but its SQL%s has no ORDER BY, so the rows come in no set order and the comparison can fail at random; add an ORDER BY that gives the sort key's order, or drop ordered:",
			p.Name, engines(without, with))
	}
}

// engines names the engines whose text a finding is about, when the
// other engine's text differs.
func engines(these, others []string) string {
	if len(others) == 0 {
		return ""
	}
	return " for " + strings.Join(these, " and ")
}

// hasOrderBy reports whether a SQL text for driver orders its answer: an
// ORDER BY outside parentheses (not one of a subquery or a window), and
// outside string literals, quoted identifiers and comments. A # starts a
// comment on MySQL only (on PostgreSQL it is an operator, as in #>), and
// dollar quotes are PostgreSQL's.
func hasOrderBy(sql, driver string) bool {
	mysql := driver == "mysql"
	depth := 0
	var prev string
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(sql, i, c)
			prev = ""
		case c == '-' && strings.HasPrefix(sql[i:], "--"), c == '#' && mysql:
			i = skipTo(sql, i, "\n")
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			i = skipTo(sql, i+2, "*/")
		case c == '$' && !mysql && dollarTag(sql[i:]) != "":
			tag := dollarTag(sql[i:])
			i = skipTo(sql, i+len(tag), tag)
			prev = ""
		case c == '(':
			depth++
			i++
		case c == ')':
			depth--
			i++
		case isWordByte(c):
			j := i
			for j < len(sql) && isWordByte(sql[j]) {
				j++
			}
			w := strings.ToLower(sql[i:j])
			if depth == 0 && prev == "order" && w == "by" {
				return true
			}
			prev, i = w, j
		default:
			i++
		}
	}
	return false
}

// skipQuoted returns the index past the quoted text starting at i; a
// doubled quote or a backslash escapes one.
func skipQuoted(s string, i int, q byte) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

// skipTo returns the index past the next end at or after i.
func skipTo(s string, i int, end string) int {
	if k := strings.Index(s[i:], end); k >= 0 {
		return i + k + len(end)
	}
	return len(s)
}

// dollarTag is the PostgreSQL dollar quote ($$ or $tag$) s starts with, or
// "" (a $1 placeholder is not one).
func dollarTag(s string) string {
	for j := 1; j < len(s); j++ {
		switch {
		case s[j] == '$':
			return s[:j+1]
		case s[j] == '_' || ('a' <= s[j] && s[j] <= 'z') || ('A' <= s[j] && s[j] <= 'Z') || (j > 1 && '0' <= s[j] && s[j] <= '9'):
		default:
			return ""
		}
	}
	return ""
}

func isWordByte(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}
