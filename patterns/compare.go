package patterns

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
	"github.com/dynafold/dynafold/verify"
)

// maxExamples bounds the mismatches kept per pattern in the report.
const maxExamples = 5

// CompareOptions tune a shadow comparison.
type CompareOptions struct {
	// Samples is how many parameter tuples each pattern is compared for
	// (all of them when there are fewer).
	Samples int
	// Seed chooses the samples: the same seed, source and mapping choose
	// the same tuples.
	Seed uint64
	// Concurrency is how many comparisons run at once.
	Concurrency int
	// Only compares the patterns whose name contains this text.
	Only string
}

// Source is what a comparison reads from the source database.
type Source interface {
	Describer
	source.ReadOnlyQuerier
}

// CompareReport is what a shadow comparison found.
type CompareReport struct {
	Table  string `json:"table"`
	Driver string `json:"driver"`
	Seed   uint64 `json:"seed"`
	// Samples is the most parameter tuples compared per pattern.
	Samples  int               `json:"samples"`
	Patterns []*PatternCompare `json:"patterns"`
	// Comparisons and Mismatches total the patterns with sql:.
	Comparisons int `json:"comparisons"`
	Mismatches  int `json:"mismatches"`
	// Failed counts the patterns without sql: whose expect: fails.
	Failed   int      `json:"failed"`
	Warnings []string `json:"warnings,omitempty"`
}

// OK reports whether every comparison agreed and every expectation held.
func (r *CompareReport) OK() bool { return r.Mismatches == 0 && r.Failed == 0 }

// PatternCompare is one pattern's comparisons.
type PatternCompare struct {
	Name string `json:"name"`
	// Query is the key condition as the mapping writes it.
	Query       string `json:"query"`
	Ordered     bool   `json:"ordered,omitempty"`
	Comparisons int    `json:"comparisons"`
	Mismatches  int    `json:"mismatches"`
	// Examples are the first mismatches, in parameter order.
	Examples []*Mismatch `json:"examples,omitempty"`
	// Expect is the plain run of a pattern without sql:, whose expect:
	// checks still apply.
	Expect *Result `json:"expect,omitempty"`
	OK     bool    `json:"ok"`
}

// Mismatch is one comparison whose answers differ, with the two queries
// as they ran, so that they can be run by hand.
type Mismatch struct {
	Params map[string]value.Value `json:"params"`
	// SQL is the text sent, with its placeholders; Bound the values bound
	// to them.
	SQL   string      `json:"sql"`
	Bound []BoundArg  `json:"bound,omitempty"`
	Query DynamoQuery `json:"dynamodb"`
	Rows  int         `json:"sql_rows"`
	Items int         `json:"items"`
	// OnlyInSQL are rows with no item (their columns); OnlyInDynamoDB
	// items with no row (their key and compared attributes).
	OnlyInSQL      []map[string]value.Value `json:"only_in_sql,omitempty"`
	OnlyInDynamoDB []ItemView               `json:"only_in_dynamodb,omitempty"`
	// Differences pairs a row with the item that answers it but differs
	// in some attributes (Old is DynamoDB's value, New the row's).
	Differences []Pair `json:"differences,omitempty"`
	// Order, for ordered: patterns, is the first position where the
	// answers hold the same rows in another order.
	Order *OrderDiff `json:"order,omitempty"`
}

// BoundArg is one placeholder and the parameter bound to it.
type BoundArg struct {
	Placeholder string      `json:"placeholder"`
	Param       string      `json:"param"`
	Value       value.Value `json:"value"`
}

// DynamoQuery is the DynamoDB query of a comparison: its key condition in
// DynamoDB's notation, and the AWS CLI command that runs it (one per
// shard).
type DynamoQuery struct {
	Condition string   `json:"condition"`
	CLI       []string `json:"cli"`
}

// ItemView is a returned item: its table key and compared attributes.
type ItemView struct {
	Key        verify.Key               `json:"key"`
	Attributes map[string]*verify.Value `json:"attributes"`
}

// Pair is a row and an item that differ in some attributes.
type Pair struct {
	Key     verify.Key             `json:"key"`
	Row     int                    `json:"row"`
	Changes []verify.Change        `json:"changes"`
	Columns map[string]value.Value `json:"columns"`
}

// OrderDiff is where two answers holding the same rows first differ in
// order: the row's expected attributes and the item's.
type OrderDiff struct {
	Position int                      `json:"position"`
	SQL      map[string]*verify.Value `json:"sql"`
	DynamoDB map[string]*verify.Value `json:"dynamodb"`
	Key      verify.Key               `json:"key"`
}

// Compare runs every access pattern with sql: against the source and the
// target and compares their answers, for sampled parameters; patterns
// without sql: run as Run runs them. Mapping problems found by describing
// the SQL are mapping.Errors; a query that fails is an error naming the
// pattern.
func Compare(ctx context.Context, api QueryAPI, src Source, plan *mapping.Plan, opts CompareOptions) (*CompareReport, error) {
	if opts.Samples <= 0 {
		opts.Samples = 100
	}
	opts.Concurrency = max(opts.Concurrency, 1)
	preps, err := prepare(ctx, src, plan, opts.Only)
	if err != nil {
		return nil, err
	}
	rep := &CompareReport{Table: plan.Table.Name, Driver: src.Driver(), Seed: opts.Seed, Samples: opts.Samples}
	for _, w := range plan.Warnings {
		rep.Warnings = append(rep.Warnings, w.Error())
	}
	sess, err := src.ReadOnly(ctx)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	byPattern := map[*mapping.AccessPattern]*prepared{}
	for _, pp := range preps {
		byPattern[pp.p] = pp
	}
	for _, p := range plan.Config.Patterns {
		if p == nil || !selected(p, opts.Only) {
			continue
		}
		pp := byPattern[p]
		if pp == nil {
			res := runOne(ctx, api, plan, p, Options{})
			pc := &PatternCompare{Name: p.Name, Query: res.Query, Expect: res, OK: res.OK}
			if !res.OK {
				rep.Failed++
			}
			rep.Patterns = append(rep.Patterns, pc)
			continue
		}
		pc, err := compareOne(ctx, api, sess, plan, pp, opts)
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", p.Name, err)
		}
		rep.Comparisons += pc.Comparisons
		rep.Mismatches += pc.Mismatches
		rep.Patterns = append(rep.Patterns, pc)
	}
	return rep, nil
}

func compareOne(ctx context.Context, api QueryAPI, sess source.ReadOnlySession, plan *mapping.Plan, pp *prepared, opts CompareOptions) (*PatternCompare, error) {
	pc := &PatternCompare{Name: pp.p.Name, Ordered: pp.p.Compare.Ordered}
	if desc, err := Describe(plan, pp.p.Query); err == nil {
		pc.Query = desc
	} else {
		pc.Query = pp.p.Query.PK
	}
	tuples, err := pp.tuples(ctx, sess)
	if err != nil {
		return nil, err
	}
	tuples = sample(tuples, opts.Samples, opts.Seed, pp.p.Name)
	results := make([]*Mismatch, len(tuples))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for i, tuple := range tuples {
		g.Go(func() error {
			m, err := pp.compare(gctx, api, sess, plan, tuple)
			if err != nil {
				return fmt.Errorf("parameters %s: %w", paramText(pp.names, tuple), err)
			}
			results[i] = m
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	pc.Comparisons = len(tuples)
	for _, m := range results {
		if m == nil {
			continue
		}
		pc.Mismatches++
		if len(pc.Examples) < maxExamples {
			pc.Examples = append(pc.Examples, m)
		}
	}
	pc.OK = pc.Mismatches == 0
	return pc, nil
}

// tuples reads the pattern's parameter tuples: the params: query's rows,
// the literal values:, or one empty tuple without params:.
func (pp *prepared) tuples(ctx context.Context, sess source.ReadOnlySession) ([]value.Row, error) {
	switch {
	case pp.p.Params == nil:
		return []value.Row{{}}, nil
	case pp.paramsSQL != "":
		rows, err := sess.Query(ctx, pp.paramsSQL, pp.paramsCols, nil)
		if err != nil {
			return nil, fmt.Errorf("reading the parameters (params.sql): %w", err)
		}
		return rows, nil
	}
	var out []value.Row
	for _, t := range pp.p.Params.Values {
		row := make(value.Row, len(pp.names))
		for i, n := range pp.names {
			row[i], _ = mapping.ParamValue(t[n]) // checked at load
		}
		out = append(out, row)
	}
	return out, nil
}

// sample chooses n of the tuples, the same ones for the same seed and
// tuples whatever order the source returned them in: the distinct tuples
// sorted, a seeded permutation of them (per pattern), its first n, kept
// in sorted order.
func sample(tuples []value.Row, n int, seed uint64, pattern string) []value.Row {
	keyed := make([]struct {
		k string
		r value.Row
	}, len(tuples))
	for i, t := range tuples {
		keyed[i].k, keyed[i].r = tupleKey(t), t
	}
	slices.SortFunc(keyed, func(a, b struct {
		k string
		r value.Row
	}) int {
		return cmp.Compare(a.k, b.k)
	})
	keyed = slices.CompactFunc(keyed, func(a, b struct {
		k string
		r value.Row
	}) bool {
		return a.k == b.k
	})
	idx := make([]int, len(keyed))
	for i := range idx {
		idx[i] = i
	}
	if len(keyed) > n {
		h := fnv.New64a()
		h.Write([]byte(pattern))
		r := rand.New(rand.NewPCG(seed, h.Sum64()))
		r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		idx = idx[:n]
		slices.Sort(idx)
	}
	out := make([]value.Row, len(idx))
	for i, j := range idx {
		out[i] = keyed[j].r
	}
	return out
}

func tupleKey(t value.Row) string {
	var sb strings.Builder
	for _, v := range t {
		fmt.Fprintf(&sb, "%d:%s\x00", v.Kind, v.Text())
	}
	return sb.String()
}

func paramText(names []string, tuple value.Row) string {
	if len(names) == 0 {
		return "(none)"
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + valueText(tuple[i])
	}
	return strings.Join(parts, ", ")
}

func valueText(v value.Value) string {
	switch v.Kind {
	case value.Null:
		return "NULL"
	case value.String:
		return quote(v.S)
	}
	return v.Text()
}

// compare runs one comparison: nil when the answers agree.
func (pp *prepared) compare(ctx context.Context, api QueryAPI, sess source.ReadOnlySession, plan *mapping.Plan, tuple value.Row) (*Mismatch, error) {
	a, err := pp.readSQL(ctx, sess, tuple)
	if err != nil {
		return nil, err
	}
	m, _, err := pp.check(ctx, api, plan, a)
	return m, err
}

// sqlAnswer is the SQL half of a comparison: the rows the pattern's SQL
// returned for one tuple, in one snapshot, with the arguments bound.
type sqlAnswer struct {
	pp    *prepared
	tuple value.Row
	bound []BoundArg
	rows  []value.Row
}

// readSQL runs the pattern's SQL for tuple in sess.
func (pp *prepared) readSQL(ctx context.Context, sess source.ReadOnlySession, tuple value.Row) (*sqlAnswer, error) {
	args := make([]value.Value, len(pp.sql.Args))
	bound := make([]BoundArg, len(pp.sql.Args))
	for i, name := range pp.sql.Args {
		args[i] = tuple[slices.Index(pp.names, name)]
		ph := "?"
		if pp.driver != "mysql" {
			ph = fmt.Sprintf("$%d", i+1)
		}
		bound[i] = BoundArg{Placeholder: ph, Param: name, Value: args[i]}
	}
	rows, err := sess.Query(ctx, pp.sql.Text, pp.cols, args)
	if err != nil {
		return nil, fmt.Errorf("running the SQL: %w", err)
	}
	return &sqlAnswer{pp: pp, tuple: tuple, bound: bound, rows: rows}, nil
}

// check runs the DynamoDB query for a's tuple and compares its items
// with a's rows: nil when they agree. global reports whether the query
// read a global secondary index (eventually consistent).
func (pp *prepared) check(ctx context.Context, api QueryAPI, plan *mapping.Plan, a *sqlAnswer) (m *Mismatch, global bool, err error) {
	tuple, rows := a.tuple, a.rows
	q, err := pp.render(tuple)
	if err != nil {
		return nil, false, err
	}
	qs, desc, err := buildQueries(plan, q)
	if err != nil {
		return nil, false, fmt.Errorf("the DynamoDB query: %w", err)
	}
	consistent := true
	if q.Index != "" && plan.Table.Index(q.Index).Global {
		consistent = false // a global index cannot be read consistently
	}
	items, err := queryAll(ctx, api, qs, q.Limit, consistent)
	if err != nil {
		return nil, !consistent, fmt.Errorf("the DynamoDB query (%s): %w", desc, err)
	}
	// A split aggregate's head and parts answer one row: compare them as
	// the one item the mapping built.
	items = plan.JoinParts(items)
	if q.Limit > 0 && len(rows) > q.Limit {
		rows = rows[:q.Limit]
	}
	want := make([]projection, len(rows))
	for i, row := range rows {
		want[i] = projection{}
		for _, a := range pp.attrs {
			av, err := mapping.EvalAttribute(a.tmpl, row, a.typ)
			if err != nil {
				return nil, !consistent, fmt.Errorf("row %d, attribute %s: %w", i+1, a.name, err)
			}
			if av != nil {
				want[i][a.name] = av
			}
		}
	}
	got := make([]projection, len(items))
	for j, it := range items {
		got[j] = projection{}
		for _, a := range pp.attrs {
			if av, ok := it[a.name]; ok {
				got[j][a.name] = av
			}
		}
	}
	d := diffAnswers(want, got, pp.p.Compare.Ordered)
	if d.empty() {
		return nil, !consistent, nil
	}
	m = &Mismatch{Params: map[string]value.Value{}, SQL: pp.sql.Text, Bound: a.bound, Rows: len(rows), Items: len(items),
		Query: DynamoQuery{Condition: desc, CLI: cliCommands(qs, consistent)}}
	for i, n := range pp.names {
		m.Params[n] = tuple[i]
	}
	colNames := columnNames(pp.cols)
	columns := func(row value.Row) map[string]value.Value {
		out := map[string]value.Value{}
		for i, c := range colNames {
			out[c] = row[i]
		}
		return out
	}
	for _, i := range d.onlySQL {
		m.OnlyInSQL = append(m.OnlyInSQL, columns(rows[i]))
	}
	for _, j := range d.onlyItems {
		m.OnlyInDynamoDB = append(m.OnlyInDynamoDB, ItemView{Key: verify.ReportKey(plan.Table, items[j]), Attributes: values(got[j])})
	}
	for _, p := range d.pairs {
		m.Differences = append(m.Differences, Pair{Key: verify.ReportKey(plan.Table, items[p[1]]), Row: p[0] + 1, Changes: verify.Diff(got[p[1]], want[p[0]]), Columns: columns(rows[p[0]])})
	}
	if d.order >= 0 {
		m.Order = &OrderDiff{Position: d.order + 1, SQL: values(want[d.order]), DynamoDB: values(got[d.order]), Key: verify.ReportKey(plan.Table, items[d.order])}
	}
	return m, !consistent, nil
}

func sqlDriverPG(pp *prepared) bool {
	return len(pp.sql.Args) == len(pp.sql.Names) && !strings.Contains(pp.sql.Text, "?")
}

func values(p projection) map[string]*verify.Value {
	out := make(map[string]*verify.Value, len(p))
	for k, av := range p {
		out[k] = &verify.Value{AV: av}
	}
	return out
}

// queryAll reads every page of each shard's query, the first limit items
// when limit > 0.
func queryAll(ctx context.Context, api QueryAPI, qs []*dynamodb.QueryInput, limit int, consistent bool) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	for _, in := range qs {
		in.ConsistentRead = aws.Bool(consistent)
		for {
			if limit > 0 {
				left := limit - len(items)
				if left <= 0 {
					break
				}
				in.Limit = aws.Int32(int32(min(left, 1000)))
			}
			out, err := api.Query(ctx, in)
			if err != nil {
				return nil, err
			}
			items = append(items, out.Items...)
			if len(out.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	if limit > 0 && len(items) > limit {
		items = items[:limit]
	}
	return items, nil
}
