package design

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/plan"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// Samples are the items built from the first rows of each entity.
type Samples struct {
	// PerEntity is how many rows were read per entity, at most.
	PerEntity int
	// Items are in table order: by partition key, then sort key, as
	// DynamoDB orders them.
	Items []mapping.Item
	// Rejected are rows that could not become items (migrate would apply
	// the entity's on_error to them): they are left out of Items.
	Rejected []*mapping.RowError
}

// errEnough stops an entity's read once it has its rows.
var errEnough = errors.New("enough sample rows")

// ReadSamples reads the first perEntity rows of each entity, in key order,
// and builds their items with the builder migrate uses (EntityPlan's
// BuildNested, through pipeline.ReadEntity, so nested child rows come as
// migrate reads them).
func ReadSamples(ctx context.Context, snap source.Snapshot, p *mapping.Plan, perEntity int) (*Samples, error) {
	s := &Samples{PerEntity: perEntity}
	for _, ep := range p.Entities {
		rows := 0
		err := pipeline.ReadEntity(ctx, snap, ep, source.Full, nil, perEntity, func(row value.Row, nested [][]value.Row) error {
			items, err := ep.BuildNested(row, nested, nil, nil)
			var rerr *mapping.RowError
			switch {
			case errors.As(err, &rerr):
				s.Rejected = append(s.Rejected, rerr)
			case err != nil:
				return err
			}
			s.Items = append(s.Items, items...)
			if rows++; rows >= perEntity {
				return errEnough
			}
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			return nil, fmt.Errorf("reading sample rows of entity %s: %w", ep.Name, err)
		}
	}
	sortItems(s.Items, p.Table.PK.Name, nameOf(p.Table.SK))
	return s, nil
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
		if c := compareKey(a[pk], b[pk]); c != 0 {
			return c < 0
		}
		return sk != "" && compareKey(a[sk], b[sk]) < 0
	})
}

// compareKey orders two key values as DynamoDB does: numbers by value,
// strings and binary by their bytes. A missing value sorts first.
func compareKey(a, b types.AttributeValue) int {
	switch x := a.(type) {
	case *types.AttributeValueMemberN:
		if y, ok := b.(*types.AttributeValueMemberN); ok {
			fx, _, errx := big.ParseFloat(x.Value, 10, 256, big.ToNearestEven)
			fy, _, erry := big.ParseFloat(y.Value, 10, 256, big.ToNearestEven)
			if errx == nil && erry == nil {
				return fx.Cmp(fy)
			}
		}
	case *types.AttributeValueMemberB:
		if y, ok := b.(*types.AttributeValueMemberB); ok {
			return bytes.Compare(x.Value, y.Value)
		}
	}
	sa, sb := mapping.KeyText(a), mapping.KeyText(b)
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	case sa < sb:
		return -1
	case sa > sb:
		return 1
	}
	return 0
}

// ReadSource fills the model from one snapshot of the source: the sample
// items and, when measure is set, plan's measurements (item sizes and hot
// keys, for the HTML page). schema and sourceID are what plan.Run takes.
func (m *Model) ReadSource(ctx context.Context, snap source.Snapshot, schema *mapping.Schema, sourceID string, perEntity int, measure *plan.Options) error {
	s, err := ReadSamples(ctx, snap, m.Plan, perEntity)
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
