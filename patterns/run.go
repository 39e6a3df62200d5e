// Package patterns runs a mapping's access patterns (access_patterns:)
// against the target table and checks their expectations: the proof that
// the single-table design answers the queries it was made for.
package patterns

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/verify"
)

// QueryAPI is the part of the DynamoDB client patterns use.
type QueryAPI interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Report is what a run found.
type Report struct {
	Table    string    `json:"table"`
	Patterns []*Result `json:"patterns"`
	Passed   int       `json:"passed"`
	Failed   int       `json:"failed"`
	// Warnings are patterns the declared keys cannot serve well.
	Warnings []string `json:"warnings,omitempty"`
}

// OK reports whether every pattern met its expectations.
func (r *Report) OK() bool { return r.Failed == 0 }

// Result is one pattern's run.
type Result struct {
	Name string `json:"name"`
	// Query describes the key condition in DynamoDB's notation.
	Query            string  `json:"query"`
	Index            string  `json:"index,omitempty"`
	Count            int     `json:"count"`
	Pages            int     `json:"pages"`
	ConsumedCapacity float64 `json:"consumed_read_capacity"`
	// Keys are the returned items' keys, in the order returned.
	Keys  []verify.Key `json:"keys"`
	Types []string     `json:"types"`
	// Items are the returned items as plain JSON, when asked for.
	Items  []map[string]any `json:"items,omitempty"`
	Checks []Check          `json:"checks"`
	OK     bool             `json:"ok"`
	Error  string           `json:"error,omitempty"`
}

// Check is one expectation and whether it held.
type Check struct {
	What string `json:"what"`
	// Op, for a count, is how Got must compare with Want: "=" (count),
	// ">=" (min_count) or "<=" (max_count).
	Op   string `json:"op,omitempty"`
	Want string `json:"want"`
	Got  string `json:"got"`
	OK   bool   `json:"ok"`
}

// Options tune a run.
type Options struct {
	// Items keeps the returned items in the report.
	Items bool
	// Only runs the patterns whose name contains this text.
	Only string
}

// Run runs every access pattern of the plan against the target.
func Run(ctx context.Context, api QueryAPI, plan *mapping.Plan, opts Options) (*Report, error) {
	rep := &Report{Table: plan.Table.Name}
	for _, w := range plan.Warnings {
		rep.Warnings = append(rep.Warnings, w.Error())
	}
	for _, p := range plan.Config.Patterns {
		if opts.Only != "" && !strings.Contains(p.Name, opts.Only) {
			continue
		}
		res := runOne(ctx, api, plan, p, opts)
		if res.OK {
			rep.Passed++
		} else {
			rep.Failed++
		}
		rep.Patterns = append(rep.Patterns, res)
	}
	return rep, nil
}

func runOne(ctx context.Context, api QueryAPI, plan *mapping.Plan, p *mapping.AccessPattern, opts Options) *Result {
	res := &Result{Name: p.Name, Index: p.Query.Index, Keys: []verify.Key{}, Types: []string{}}
	qs, desc, err := buildQueries(plan, p.Query)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Query = desc
	var items []map[string]types.AttributeValue
	limit := p.Query.Limit
	for _, in := range qs {
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
				res.Error = fmt.Sprintf("query: %v", err)
				return res
			}
			res.Pages++
			if out.ConsumedCapacity != nil && out.ConsumedCapacity.CapacityUnits != nil {
				res.ConsumedCapacity += *out.ConsumedCapacity.CapacityUnits
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
	res.Count = len(items)
	seen := map[string]bool{}
	for _, it := range items {
		res.Keys = append(res.Keys, verify.ReportKey(plan.Table, it))
		if ta := plan.Table.TypeAttribute; ta != "" {
			if t := mapping.KeyText(it[ta]); t != "" && !seen[t] {
				seen[t] = true
				res.Types = append(res.Types, t)
			}
		}
		if opts.Items {
			res.Items = append(res.Items, mapping.PlainJSON(&types.AttributeValueMemberM{Value: it}).(map[string]any))
		}
	}
	res.Checks = check(p.Expect, res)
	res.OK = true
	for _, c := range res.Checks {
		res.OK = res.OK && c.OK
	}
	return res
}
