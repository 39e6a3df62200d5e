package design

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/internal/render"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/plan"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// Samples are the items built from a few rows of each entity: its first
// rows, and the rows whose items are in the collections sampled.
type Samples struct {
	// PerEntity is how many of each entity's first rows were read, and
	// how many rows per entity each collection takes, at most.
	PerEntity int
	// Items are in table order: by partition key, then sort key, as
	// DynamoDB orders them.
	Items []mapping.Item
	// Rejected are rows that could not become items (migrate would apply
	// the entity's on_error to them): they are left out of Items. Only the
	// first rows are reported; rows read to find collections are not.
	Rejected []*mapping.RowError
	// Collections are the collections sampled, as given, each with the
	// number of sample items it holds.
	Collections []CollectionSample
	// Capped names the entities whose read stopped at MaxScan rows before
	// every collection had its rows.
	Capped  []string
	MaxScan int
}

// CappedNote says which entities were read only in part ("" when none
// was): a collection further on in them was not looked for.
func (s *Samples) CappedNote() string {
	if len(s.Capped) == 0 {
		return ""
	}
	return fmt.Sprintf("entities %s were read only to their first %s rows", strings.Join(s.Capped, ", "), render.Thousands(int64(s.MaxScan)))
}

// CollectionSample is a collection and how many sample items are in it.
type CollectionSample struct {
	*Collection
	Items int
}

// SampleOptions say which rows ReadSamples takes.
type SampleOptions struct {
	// PerEntity is the number of first rows of each entity, and of rows
	// per entity each collection takes.
	PerEntity int
	// Collections are what the samples must show besides the first rows.
	Collections []*Collection
	// MaxScan bounds the rows of one entity read to find them (0:
	// MaxSampleScan).
	MaxScan int
}

// MaxSampleScan bounds, by default, the rows of one entity read to find
// the rows of the collections (each is built as migrate builds it): a
// collection further on than that in a large table is not looked for, and
// the caller is told (Samples.Capped).
const MaxSampleScan = 100_000

// samplePage is the page size of a read that looks for collections.
const samplePage = 1000

// errEnough stops an entity's read once it has its rows.
var errEnough = errors.New("enough sample rows")

// ReadSamples reads, in key order, the first PerEntity rows of each
// entity and the rows whose items are in opts.Collections (up to
// PerEntity rows per entity of each), and builds their items with the
// builder migrate uses (EntityPlan's BuildNested, through
// pipeline.ReadEntity, so nested child rows come as migrate reads them).
// An entity whose items cannot be in any collection is read no further
// than its first rows; one that can is read until each has its rows, or
// to its end, or to MaxSampleScan rows.
func ReadSamples(ctx context.Context, snap source.Snapshot, p *mapping.Plan, opts SampleOptions) (*Samples, error) {
	n := opts.PerEntity
	maxScan := opts.MaxScan
	if maxScan <= 0 {
		maxScan = MaxSampleScan
	}
	s := &Samples{PerEntity: n, MaxScan: maxScan}
	for _, ep := range p.Entities {
		var want []*Collection
		var quota []int
		for _, c := range opts.Collections {
			if c.mayHold(ep, p.Table) {
				want = append(want, c)
				q := n
				if at := c.rowsAtMost(ep, p.Table); at > 0 {
					q = min(q, at)
				}
				quota = append(quota, q)
			}
		}
		page := n
		if len(want) > 0 {
			page = max(n, min(samplePage, maxScan))
		}
		taken := make([]int, len(want))
		rows, first := 0, 0
		full := func() bool {
			for i, t := range taken {
				if t < quota[i] {
					return false
				}
			}
			return first >= n
		}
		err := pipeline.ReadEntity(ctx, snap, ep, source.Full, nil, page, func(row value.Row, nested [][]value.Row) error {
			rows++
			isFirst := first < n
			items, err := ep.BuildNested(row, nested, nil, nil)
			var rerr *mapping.RowError
			switch {
			case errors.As(err, &rerr):
				if isFirst {
					s.Rejected = append(s.Rejected, rerr)
					first++
				}
			case err != nil:
				return err
			default:
				take := isFirst
				for i, c := range want {
					if taken[i] < quota[i] && holdsAny(c, items) {
						taken[i]++
						take = true
					}
				}
				if take {
					s.Items = append(s.Items, items...)
				}
				if isFirst {
					first++
				}
			}
			if full() {
				return errEnough
			}
			if rows >= maxScan {
				s.Capped = append(s.Capped, ep.Name)
				return errEnough
			}
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			return nil, fmt.Errorf("reading sample rows of entity %s: %w", ep.Name, err)
		}
	}
	sortItems(s.Items, p.Table.PK.Name, nameOf(p.Table.SK))
	for _, c := range opts.Collections {
		cs := CollectionSample{Collection: c}
		for i := range s.Items {
			if c.Holds(s.Items[i].Attributes()) {
				cs.Items++
			}
		}
		s.Collections = append(s.Collections, cs)
	}
	return s, nil
}

func holdsAny(c *Collection, items []mapping.Item) bool {
	for i := range items {
		if c.Holds(items[i].Attributes()) {
			return true
		}
	}
	return false
}

func nameOf(k *mapping.KeyAttr) string {
	if k == nil {
		return ""
	}
	return k.Name
}

// typeOf is the type the sample items give an attribute ("" if none has it).
func (s *Samples) typeOf(name string) mapping.AttrType {
	if s == nil {
		return ""
	}
	for i := range s.Items {
		if av, ok := s.Items[i].Attributes()[name]; ok {
			return typeName(av)
		}
	}
	return ""
}

// typeName is an attribute value's DynamoDB type.
func typeName(av types.AttributeValue) mapping.AttrType {
	switch av.(type) {
	case *types.AttributeValueMemberS:
		return mapping.TypeS
	case *types.AttributeValueMemberN:
		return mapping.TypeN
	case *types.AttributeValueMemberB:
		return mapping.TypeB
	case *types.AttributeValueMemberBOOL:
		return mapping.TypeBOOL
	case *types.AttributeValueMemberM:
		return mapping.TypeM
	case *types.AttributeValueMemberL:
		return mapping.TypeL
	case *types.AttributeValueMemberSS:
		return mapping.TypeSS
	case *types.AttributeValueMemberNS:
		return mapping.TypeNS
	case *types.AttributeValueMemberBS:
		return mapping.TypeBS
	}
	return "NULL"
}

// sortItems orders items by the key attributes pk and sk (a table's or an
// index's), as DynamoDB orders a query's results.
func sortItems(items []mapping.Item, pk, sk string) {
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i].Attributes(), items[j].Attributes()
		if c := mapping.CompareKey(a[pk], b[pk]); c != 0 {
			return c < 0
		}
		return sk != "" && mapping.CompareKey(a[sk], b[sk]) < 0
	})
}

// ReadSource fills the model from one snapshot of the source: the sample
// items and, when measure is set, plan's measurements (item sizes and hot
// keys, for the HTML page). schema and sourceID are what plan.Run takes.
func (m *Model) ReadSource(ctx context.Context, snap source.Snapshot, schema *mapping.Schema, sourceID string, samples SampleOptions, measure *plan.Options) error {
	s, err := ReadSamples(ctx, snap, m.Plan, samples)
	if err != nil {
		return err
	}
	m.Samples = s
	if measure == nil {
		return nil
	}
	m.Measured, err = plan.Run(ctx, plan.Input{Plan: m.Plan, Schema: schema, Snapshot: snap, Source: sourceID}, *measure)
	if err != nil {
		return fmt.Errorf("measuring the source: %w", err)
	}
	return nil
}
