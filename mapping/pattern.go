package mapping

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.yaml.in/yaml/v3"

	"github.com/dynafold/dynafold/value"
)

// This file holds the SQL meaning of an access pattern (params:, sql:,
// compare:): its checks at load and what patterns --compare-source needs
// from the mapping to bind parameters and convert values the way items
// are built.

// ShardParam is the name ${shard} takes in a pattern's pk when the pattern
// declares shards: N; it is no parameter.
const ShardParam = "shard"

// UnmarshalYAML accepts one text for both engines or {postgres:, mysql:}.
func (s *PatternSQL) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!null" {
			return &yaml.TypeError{Errors: []string{lineMsg(n, "sql: needs the application's query, or {postgres: …, mysql: …}")}}
		}
		*s = PatternSQL{Postgres: n.Value, MySQL: n.Value, shared: true}
		return nil
	}
	type plain PatternSQL
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*s = PatternSQL(p)
	return nil
}

// texts lists the texts of a pattern's sql: with the key path of each.
func (s *PatternSQL) texts(path string) []struct{ path, driver, text string } {
	if s.shared {
		return []struct{ path, driver, text string }{{path, "postgres", s.Postgres}, {path, "mysql", s.MySQL}}
	}
	return []struct{ path, driver, text string }{{path + ".postgres", "postgres", s.Postgres}, {path + ".mysql", "mysql", s.MySQL}}
}

// SQLPath is the key path of the pattern's SQL text for a driver, for
// errors found when the source describes it.
func (s *PatternSQL) SQLPath(path, driver string) string {
	if s.shared {
		return path
	}
	return path + "." + driver
}

// QueryTemplates lists the query's texts that take parameters, by their
// key under query:, in file order (sk_between as sk_between[0] and [1]).
func (q PatternQuery) QueryTemplates() []Entry[string] {
	out := []Entry[string]{{Key: "pk", Value: q.PK}}
	for _, c := range []struct {
		key string
		v   *string
	}{{"sk", q.SKEquals}, {"sk_begins_with", q.SKBeginsWith}, {"sk_lt", q.SKLess}, {"sk_le", q.SKLessEq}, {"sk_gt", q.SKGreater}, {"sk_ge", q.SKGreaterEq}} {
		if c.v != nil {
			out = append(out, Entry[string]{Key: c.key, Value: *c.v})
		}
	}
	for i, v := range q.SKBetween {
		out = append(out, Entry[string]{Key: fmt.Sprintf("sk_between[%d]", i), Value: v})
	}
	return out
}

// ValueNames are the parameter names of a params: values: list (the keys
// of its first tuple, sorted), nil when the pattern has none.
func (p *AccessPattern) ValueNames() []string {
	if p.Params == nil || len(p.Params.Values) == 0 {
		return nil
	}
	var names []string
	for k := range p.Params.Values[0] {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// validatePatternMeaning checks a pattern's params:, sql: and compare:
// for what needs no database. Parameters taken from a params: query are
// known only once the source describes it; patterns --compare-source checks
// them then (CheckPatternParams).
func validatePatternMeaning(path string, p *AccessPattern, errs *Errors) {
	if p.Params != nil {
		pp := p.Params
		switch {
		case pp.SQL != "" && pp.Values != nil:
			errs.add(path+".params", "set one of sql: (a query whose columns are the parameters) and values: (literal tuples), not both")
		case pp.SQL == "" && len(pp.Values) == 0:
			errs.add(path+".params", "set sql: (a query whose columns are the parameters) or values: (literal tuples)")
		case pp.SQL != "":
			if _, err := BindParams(pp.SQL, "postgres"); err != nil {
				errs.add(path+".params.sql", "%v", err)
			}
		}
		if len(pp.Values) > 0 {
			want := p.ValueNames()
			for i, tuple := range pp.Values {
				var got []string
				for k, v := range tuple {
					got = append(got, k)
					if !isParamName(k) {
						errs.add(fmt.Sprintf("%s.params.values[%d].%s", path, i, k), "a parameter name is a letter or _ followed by letters, digits and _")
					}
					if _, err := ParamValue(v); err != nil {
						errs.add(fmt.Sprintf("%s.params.values[%d].%s", path, i, k), "%v", err)
					}
				}
				sort.Strings(got)
				if !slices.Equal(got, want) {
					errs.add(fmt.Sprintf("%s.params.values[%d]", path, i), "every tuple names the same parameters as the first (%s), not %s", strings.Join(want, ", "), strings.Join(got, ", "))
				}
			}
		}
	}
	switch {
	case p.SQL != nil && p.Compare == nil:
		errs.add(path+".sql", "sql: needs compare: to say which item attribute corresponds to which column")
	case p.SQL == nil && p.Compare != nil:
		errs.add(path+".compare", "compare: needs sql:, the application's query whose rows the items are compared with")
	case p.SQL == nil && p.Params != nil:
		errs.add(path+".params", "params: needs sql:, the application's query the parameters are bound to")
	}
	if p.Compare != nil {
		if len(p.Compare.Attributes) == 0 {
			errs.add(path+".compare.attributes", "name at least one item attribute and the column (or template) it corresponds to")
		}
		for _, a := range p.Compare.Attributes {
			if _, err := ParseTemplate(compareSource(a.Value)); err != nil {
				errs.add(path+".compare.attributes."+a.Key, "%v", err)
			}
		}
	}
	// Known parameter names: from values:, or none without params:.
	var known []string
	switch {
	case p.Params == nil:
	case len(p.Params.Values) > 0 && p.Params.SQL == "":
		known = p.ValueNames()
	default:
		known = nil // from a query: checked when it is described
	}
	if p.Params != nil && known == nil {
		if p.SQL != nil {
			for _, t := range p.SQL.texts(path + ".sql") {
				if _, err := BindParams(t.text, t.driver); err != nil {
					errs.add(t.path, "%v", err)
				}
			}
		}
		return
	}
	for _, e := range CheckPatternParams(path, p, known) {
		*errs = append(*errs, e)
	}
}

// CheckPatternParams checks that every parameter a pattern's query
// templates and SQL use is one of known (its params:). A pattern without
// params: keeps its query literal, so only its SQL is checked.
func CheckPatternParams(path string, p *AccessPattern, known []string) []*Error {
	var out []*Error
	isKnown := func(name string) bool { return slices.Contains(known, name) }
	unknown := func(at, name string) {
		msg := fmt.Sprintf("unknown parameter %q", name)
		if s := suggest(name, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		} else if len(known) > 0 {
			msg += " (params: gives " + strings.Join(known, ", ") + ")"
		} else {
			msg += " (the pattern has no params:)"
		}
		out = append(out, &Error{Path: at, Msg: msg})
	}
	if p.Params != nil {
		for _, t := range p.Query.QueryTemplates() {
			tmpl, err := ParseTemplate(t.Value)
			at := path + ".query." + t.Key
			if err != nil {
				out = append(out, &Error{Path: at, Msg: err.Error()})
				continue
			}
			for _, e := range tmpl.Exprs() {
				name := e.Ref.String()
				if name == ShardParam && t.Key == "pk" && p.Query.ShardRange > 0 {
					continue
				}
				if !isKnown(name) {
					unknown(at, name)
				}
			}
		}
	}
	if p.SQL != nil {
		for _, t := range p.SQL.texts(path + ".sql") {
			if strings.TrimSpace(t.text) == "" {
				out = append(out, &Error{Path: t.path, Msg: "no SQL for " + t.driver + ": give one text, or both postgres: and mysql:"})
				continue
			}
			b, err := BindParams(t.text, t.driver)
			if err != nil {
				out = append(out, &Error{Path: t.path, Msg: err.Error()})
				continue
			}
			for _, name := range b.Names {
				if !isKnown(name) {
					unknown(t.path, ":"+name)
				}
			}
			if t.path == path+".sql" {
				break // one text for both engines: checked once
			}
		}
	}
	return out
}

func isParamName(s string) bool {
	if s == "" || !isNameStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

// compareSource is a compare: entry as a template: a column name becomes
// ${column}.
func compareSource(s string) string {
	if strings.Contains(s, "${") {
		return s
	}
	return "${" + s + "}"
}

// ParamValue turns a literal parameter from the file into a value: a
// number stays a number, text stays text.
func ParamValue(v any) (value.Value, error) {
	switch x := v.(type) {
	case int:
		return value.IntValue(int64(x)), nil
	case int64:
		return value.IntValue(x), nil
	case uint64:
		return value.DecimalValue(fmt.Sprint(x)), nil
	case float64:
		return value.FloatValue(x), nil
	case bool:
		return value.BoolValue(x), nil
	case string:
		return value.StringValue(x), nil
	case nil:
		return value.Value{}, fmt.Errorf("a parameter cannot be null")
	}
	return value.Value{}, fmt.Errorf("a parameter is a number, text or a boolean, not a %T", v)
}

// checkPatternAttributes reports compare: attributes that no entity
// writes: such an attribute is absent from every item, so the comparison
// could never hold.
func checkPatternAttributes(cfg *Config, p *Plan, errs *Errors) {
	written := p.writtenAttributes()
	var names []string
	for n := range written {
		names = append(names, n)
	}
	for i, ap := range cfg.Patterns {
		if ap == nil || ap.Compare == nil {
			continue
		}
		for _, a := range ap.Compare.Attributes {
			if _, ok := written[a.Key]; ok {
				continue
			}
			msg := fmt.Sprintf("no entity writes attribute %q", a.Key)
			if s := suggest(a.Key, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			errs.add(fmt.Sprintf("access_patterns[%d].compare.attributes.%s", i, a.Key), "%s", msg)
		}
	}
}

// writtenAttributes maps every attribute some item carries to the type
// it is stored as (TypeAuto when not known without the source).
func (p *Plan) writtenAttributes() map[string]AttrType {
	out := map[string]AttrType{}
	set := func(name string, t AttrType) {
		if prev, ok := out[name]; !ok || prev == TypeAuto {
			out[name] = t
		}
	}
	set(p.Table.PK.Name, p.Table.PK.Type)
	if p.Table.SK != nil {
		set(p.Table.SK.Name, p.Table.SK.Type)
	}
	if p.Table.TypeAttribute != "" {
		set(p.Table.TypeAttribute, TypeS)
	}
	for _, e := range p.Entities {
		for _, it := range e.Items {
			if it.ttl != nil && p.Table.TTLAttribute != "" {
				set(p.Table.TTLAttribute, TypeN)
			}
			for _, a := range it.attrs {
				t := a.storedType()
				if a.keyType != "" {
					t = a.keyType
				}
				set(a.name, t)
			}
		}
		for _, np := range e.nests {
			set(np.Name, np.Type())
		}
	}
	return out
}

// AttributeType is the type an attribute is stored as, as the mapping
// converts it (TypeAuto: the natural type of the value), and whether any
// entity writes it.
func (p *Plan) AttributeType(name string) (AttrType, bool) {
	t, ok := p.writtenAttributes()[name]
	return t, ok
}

// BindTemplate parses a template over named columns (a pattern's
// parameters, or the columns of its SQL's rows) and binds each expression
// to its column's position in columns. ${var.NAME} is not allowed.
func BindTemplate(src string, columns []string) (*Template, error) {
	t, err := ParseTemplate(src)
	if err != nil {
		return nil, err
	}
	for _, e := range t.Exprs() {
		name := e.Ref.String()
		i := slices.Index(columns, name)
		if i < 0 {
			msg := fmt.Sprintf("unknown column %q", name)
			if s := suggest(name, columns); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += " (there are " + strings.Join(columns, ", ") + ")"
			}
			return nil, fmt.Errorf("%s", msg)
		}
		e.col = i
	}
	return t, nil
}

// CompareTemplate is BindTemplate for a compare: entry, where a bare
// column name stands for ${column}.
func CompareTemplate(src string, columns []string) (*Template, error) {
	return BindTemplate(compareSource(src), columns)
}

// EvalAttribute computes an attribute of type t from a template over a
// row the way an item's attribute is built (see attrPlan.eval): a lone
// ${column} converts the column's value, several parts make a string;
// NULL makes no attribute (nil).
func EvalAttribute(tmpl *Template, row value.Row, t AttrType) (types.AttributeValue, error) {
	var v value.Value
	if e, single := tmpl.Single(); single {
		ev, ok, err := e.Eval(row)
		if err != nil || !ok {
			return nil, err
		}
		v = ev
	} else {
		s, ok, err := tmpl.Render(row)
		if err != nil || !ok {
			return nil, err
		}
		v = value.StringValue(s)
	}
	av, err := Convert(v, t)
	if err == errOmit {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return av, nil
}
