package patterns

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// Describer is the part of a source the load-time checks of SQL meanings
// use: the driver, and the columns a query returns.
type Describer interface {
	Driver() string
	DescribeQuery(ctx context.Context, sql string) (*source.Table, error)
}

// prepared is one pattern with sql:, checked against the source and
// bound: its parameters, its SQL with placeholders and result columns,
// its query templates and its compare: attributes.
type prepared struct {
	p    *mapping.AccessPattern
	path string
	// names are the parameters, in tuple order.
	names []string
	// paramsSQL and paramsCols read the tuples (params: {sql:}).
	paramsSQL  string
	paramsCols []source.Column
	sql        mapping.BoundSQL
	cols       []source.Column
	// query holds the bound templates of the query's texts, by key;
	// their rows are a tuple with ${shard} appended.
	query  map[string]*mapping.Template
	attrs  []compareAttr
	driver string
}

type compareAttr struct {
	name string
	tmpl *mapping.Template
	typ  mapping.AttrType
}

// columnNames lists described columns' names.
func columnNames(cols []source.Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// prepare checks every pattern with sql: against the source and binds
// it. Problems are mapping errors naming the key: a parameter no params:
// gives, a column the SQL does not return, SQL the server rejects.
func prepare(ctx context.Context, d Describer, plan *mapping.Plan, only string) ([]*prepared, error) {
	driver := d.Driver()
	var errs mapping.Errors
	var out []*prepared
	for i, p := range plan.Config.Patterns {
		if p == nil || p.SQL == nil || !selected(p, only) {
			continue
		}
		path := fmt.Sprintf("access_patterns[%d]", i)
		pp := &prepared{p: p, path: path, driver: driver, query: map[string]*mapping.Template{}}
		before := len(errs)
		switch {
		case p.Params == nil:
		case p.Params.SQL != "":
			b, err := mapping.BindParams(p.Params.SQL, driver)
			if err == nil && len(b.Names) > 0 {
				err = fmt.Errorf("the parameters' query takes no parameters itself, not :%s", b.Names[0])
			}
			var t *source.Table
			if err == nil {
				t, err = d.DescribeQuery(ctx, p.Params.SQL)
			}
			if err != nil {
				errs = append(errs, &mapping.Error{Path: path + ".params.sql", Msg: err.Error()})
				continue
			}
			pp.paramsSQL, pp.paramsCols, pp.names = p.Params.SQL, t.Columns, columnNames(t.Columns)
		default:
			pp.names = p.ValueNames()
		}
		errs = append(errs, mapping.CheckPatternParams(path, p, pp.names)...)
		if len(errs) > before {
			continue
		}
		sqlPath := p.SQL.SQLPath(path+".sql", driver)
		text := p.SQL.For(driver)
		b, err := mapping.BindParams(text, driver)
		if err != nil {
			errs = append(errs, &mapping.Error{Path: sqlPath, Msg: err.Error()})
			continue
		}
		describe := b.Text
		if driver == "mysql" {
			describe, _ = mapping.NullParams(text, driver)
		}
		t, err := d.DescribeQuery(ctx, describe)
		if err != nil {
			errs = append(errs, &mapping.Error{Path: sqlPath, Msg: err.Error()})
			continue
		}
		pp.sql, pp.cols = b, t.Columns
		cols := columnNames(t.Columns)
		for _, a := range p.Compare.Attributes {
			tmpl, err := mapping.CompareTemplate(a.Value, cols)
			at := path + ".compare.attributes." + a.Key
			if err != nil {
				errs = append(errs, &mapping.Error{Path: at, Msg: fmt.Sprintf("the SQL does not return it: %v", err)})
				continue
			}
			typ, _ := plan.AttributeType(a.Key)
			pp.attrs = append(pp.attrs, compareAttr{name: a.Key, tmpl: tmpl, typ: typ})
		}
		if p.Params != nil {
			withShard := append(slices.Clone(pp.names), mapping.ShardParam)
			for _, qt := range p.Query.QueryTemplates() {
				tmpl, err := mapping.BindTemplate(qt.Value, withShard)
				if err != nil {
					errs = append(errs, &mapping.Error{Path: path + ".query." + qt.Key, Msg: err.Error()})
					continue
				}
				pp.query[qt.Key] = tmpl
			}
		}
		out = append(out, pp)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

func selected(p *mapping.AccessPattern, only string) bool {
	return only == "" || strings.Contains(p.Name, only)
}

// render is the pattern's query with a tuple's values in its templates;
// the query as written when the pattern has no params:.
func (pp *prepared) render(tuple value.Row) (mapping.PatternQuery, error) {
	q := pp.p.Query
	if pp.p.Params == nil {
		return q, nil
	}
	row := append(slices.Clone(tuple), value.StringValue("${shard}"))
	get := func(key string) (string, error) {
		s, ok, err := pp.query[key].Render(row)
		if err != nil {
			return "", fmt.Errorf("query.%s: %w", key, err)
		}
		if !ok {
			return "", fmt.Errorf("query.%s: a parameter is NULL", key)
		}
		return s, nil
	}
	var err error
	if q.PK, err = get("pk"); err != nil {
		return q, err
	}
	for _, c := range []struct {
		key string
		v   **string
	}{{"sk", &q.SKEquals}, {"sk_begins_with", &q.SKBeginsWith}, {"sk_lt", &q.SKLess}, {"sk_le", &q.SKLessEq}, {"sk_gt", &q.SKGreater}, {"sk_ge", &q.SKGreaterEq}} {
		if *c.v == nil {
			continue
		}
		s, err := get(c.key)
		if err != nil {
			return q, err
		}
		*c.v = &s
	}
	if q.SKBetween != nil {
		between := make([]string, len(q.SKBetween))
		for i := range between {
			if between[i], err = get(fmt.Sprintf("sk_between[%d]", i)); err != nil {
				return q, err
			}
		}
		q.SKBetween = between
	}
	return q, nil
}
