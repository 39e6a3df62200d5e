package sink

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
)

// TableAPI is the part of the DynamoDB client that table management uses.
type TableAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
}

// TableState is what DescribeTable says about the target table.
type TableState struct {
	Exists bool
	Status string
	// ProvisionedWrite is the table's provisioned write capacity (0 for
	// on-demand), which bounds the write rate when --max-wcu is not set.
	ProvisionedWrite int64
	ItemCount        int64
	// Stream is the view type of the table's enabled stream, or "".
	Stream string
	// Differences lists every way the table differs from the mapping.
	Differences []string
	// Notes are differences that do not stop a migration (an extra index).
	Notes []string
}

// ErrTableMismatch is returned when an existing table's keys or indexes
// differ from the mapping's.
var ErrTableMismatch = errors.New("the table differs from the mapping")

// DescribeTable compares the existing table with the schema.
func DescribeTable(ctx context.Context, api TableAPI, s *mapping.TableSchema) (*TableState, error) {
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.Name)})
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return &TableState{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describing table %s: %w", s.Name, err)
	}
	d := out.Table
	st := &TableState{Exists: true, Status: string(d.TableStatus), Stream: streamViewType(d)}
	if d.ItemCount != nil {
		st.ItemCount = *d.ItemCount
	}
	if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		if d.ProvisionedThroughput != nil && d.ProvisionedThroughput.WriteCapacityUnits != nil {
			st.ProvisionedWrite = *d.ProvisionedThroughput.WriteCapacityUnits
		}
	}
	attrTypes := map[string]string{}
	for _, ad := range d.AttributeDefinitions {
		attrTypes[aws.ToString(ad.AttributeName)] = string(ad.AttributeType)
	}
	st.Differences = append(st.Differences, compareKeys("table", d.KeySchema, attrTypes, s.PK, s.SK)...)
	existing := map[string]bool{}
	for _, g := range d.GlobalSecondaryIndexes {
		name := aws.ToString(g.IndexName)
		existing[name] = true
		st.compareIndex(s, name, true, g.KeySchema, g.Projection, attrTypes)
	}
	for _, l := range d.LocalSecondaryIndexes {
		name := aws.ToString(l.IndexName)
		existing[name] = true
		st.compareIndex(s, name, false, l.KeySchema, l.Projection, attrTypes)
	}
	for _, ix := range s.Indexes {
		if !existing[ix.Name] {
			kind := "global"
			if !ix.Global {
				kind = "local (local indexes can only be created with the table)"
			}
			st.Differences = append(st.Differences, fmt.Sprintf("index %s is missing: the mapping declares a %s index", ix.Name, kind))
		}
	}
	// A stream is not a difference: writes land the same without one,
	// and it is enabled at cutover. table create and failback ask for it.
	switch {
	case st.Stream == s.StreamViewType:
	case s.StreamViewType == "":
		st.Notes = append(st.Notes, fmt.Sprintf("the table has a stream (%s), which the mapping does not declare", st.Stream))
	case st.Stream == "":
		st.Notes = append(st.Notes, fmt.Sprintf("the mapping declares a stream (%s), which the table does not have", s.StreamViewType))
	default:
		st.Notes = append(st.Notes, fmt.Sprintf("the table's stream has view type %s, the mapping's %s", st.Stream, s.StreamViewType))
	}
	return st, nil
}

func (st *TableState) compareIndex(s *mapping.TableSchema, name string, global bool, ks []types.KeySchemaElement, p *types.Projection, attrTypes map[string]string) {
	ix := s.Index(name)
	if ix == nil {
		st.Notes = append(st.Notes, fmt.Sprintf("the table has index %s, which the mapping does not declare", name))
		return
	}
	if ix.Global != global {
		st.Differences = append(st.Differences, fmt.Sprintf("index %s is %s in the table but %s in the mapping", name, kindName(global), kindName(ix.Global)))
		return
	}
	st.Differences = append(st.Differences, compareKeys("index "+name, ks, attrTypes, ix.PK, ix.SK)...)
	if p != nil && string(p.ProjectionType) != ix.Projection {
		st.Differences = append(st.Differences, fmt.Sprintf("index %s projects %s in the table but %s in the mapping", name, p.ProjectionType, ix.Projection))
	}
}

func kindName(global bool) string {
	if global {
		return "global"
	}
	return "local"
}

func compareKeys(what string, ks []types.KeySchemaElement, attrTypes map[string]string, pk mapping.KeyAttr, sk *mapping.KeyAttr) []string {
	var hash, rng string
	for _, k := range ks {
		if k.KeyType == types.KeyTypeHash {
			hash = aws.ToString(k.AttributeName)
		} else {
			rng = aws.ToString(k.AttributeName)
		}
	}
	var diffs []string
	want := func(role, have string, k *mapping.KeyAttr) {
		switch {
		case k == nil && have != "":
			diffs = append(diffs, fmt.Sprintf("%s has sort key %s but the mapping declares none", what, have))
		case k == nil:
		case have == "":
			diffs = append(diffs, fmt.Sprintf("%s has no %s; the mapping declares %s (%s)", what, role, k.Name, k.Type))
		case have != k.Name:
			diffs = append(diffs, fmt.Sprintf("%s %s is %s in the table but %s in the mapping", what, role, have, k.Name))
		case attrTypes[have] != string(k.Type):
			diffs = append(diffs, fmt.Sprintf("%s %s %s has type %s in the table but %s in the mapping", what, role, have, attrTypes[have], k.Type))
		}
	}
	want("partition key", hash, &pk)
	want("sort key", rng, sk)
	return diffs
}

// CreateResult says what CreateTable did.
type CreateResult struct {
	Created bool
	// TTL is "enabled", "already enabled", "unsupported: …" or "".
	TTL   string
	State *TableState
}

// CreateTable creates the table with its indexes, billing mode and stream
// and waits until it is ACTIVE. When the table exists and matches it
// succeeds without change; when it differs it fails with every
// difference. An existing table without the mapping's stream (or with
// another view type), or an endpoint that created the table without it,
// is a *StreamError: the stream is never changed here, since enabling one
// on a live table is the operator's step of the cutover.
func CreateTable(ctx context.Context, api TableAPI, s *mapping.TableSchema, wait time.Duration) (*CreateResult, error) {
	st, err := DescribeTable(ctx, api, s)
	if err != nil {
		return nil, err
	}
	res := &CreateResult{State: st}
	if st.Exists {
		if len(st.Differences) > 0 {
			return res, fmt.Errorf("%w:\n  - %s", ErrTableMismatch, strings.Join(st.Differences, "\n  - "))
		}
		if s.StreamViewType != "" && st.Stream != s.StreamViewType {
			return res, &StreamError{Table: s.Name, Want: s.StreamViewType, Have: st.Stream}
		}
	} else {
		if _, err := api.CreateTable(ctx, createInput(s)); err != nil {
			var inUse *types.ResourceInUseException
			if !errors.As(err, &inUse) {
				return nil, fmt.Errorf("creating table %s: %w", s.Name, err)
			}
		}
		res.Created = true
	}
	waiter := dynamodb.NewTableExistsWaiter(api, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 200 * time.Millisecond
		o.MaxDelay = 5 * time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.Name)}, wait); err != nil {
		return res, fmt.Errorf("waiting for table %s to become ACTIVE: %w", s.Name, err)
	}
	if s.TTLAttribute != "" {
		res.TTL = enableTTL(ctx, api, s)
	}
	if res.Created {
		st, err := DescribeTable(ctx, api, s)
		if err != nil {
			return res, nil
		}
		res.State = st
		if s.StreamViewType != "" && st.Stream != s.StreamViewType {
			// The request carried the StreamSpecification; an endpoint
			// that drops it silently (dynalite) has no streams.
			return res, &StreamError{Table: s.Name, Want: s.StreamViewType, Have: st.Stream, Unsupported: true}
		}
	}
	return res, nil
}

// enableTTL turns on TTL for the mapping's attribute. Local servers such as
// dynalite do not implement TTL updates; that is reported, not fatal.
func enableTTL(ctx context.Context, api TableAPI, s *mapping.TableSchema) string {
	if d, err := api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(s.Name)}); err == nil && d.TimeToLiveDescription != nil {
		desc := d.TimeToLiveDescription
		if aws.ToString(desc.AttributeName) == s.TTLAttribute && (desc.TimeToLiveStatus == types.TimeToLiveStatusEnabled || desc.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
			return "already enabled on " + s.TTLAttribute
		}
	}
	_, err := api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(s.Name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(s.TTLAttribute), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return "unsupported by this endpoint (" + firstLine(err.Error()) + "); items still carry " + s.TTLAttribute
	}
	return "enabled on " + s.TTLAttribute
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// CreateInput is the CreateTable request table create sends for the
// mapping's table: keys, attribute definitions (sorted by name), GSIs and
// LSIs with their projections, billing and capacity, and the stream. TTL
// is set after creation (UpdateTimeToLive), so it is not part of it.
func CreateInput(s *mapping.TableSchema) *dynamodb.CreateTableInput { return createInput(s) }

func createInput(s *mapping.TableSchema) *dynamodb.CreateTableInput {
	attrs := map[string]types.ScalarAttributeType{}
	keySchema := func(pk mapping.KeyAttr, sk *mapping.KeyAttr) []types.KeySchemaElement {
		attrs[pk.Name] = types.ScalarAttributeType(pk.Type)
		ks := []types.KeySchemaElement{{AttributeName: aws.String(pk.Name), KeyType: types.KeyTypeHash}}
		if sk != nil {
			attrs[sk.Name] = types.ScalarAttributeType(sk.Type)
			ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(sk.Name), KeyType: types.KeyTypeRange})
		}
		return ks
	}
	in := &dynamodb.CreateTableInput{
		TableName:           aws.String(s.Name),
		KeySchema:           keySchema(s.PK, s.SK),
		BillingMode:         types.BillingMode(s.Billing),
		StreamSpecification: streamSpecification(s.StreamViewType),
	}
	if s.Capacity != nil {
		in.ProvisionedThroughput = &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(s.Capacity.Read), WriteCapacityUnits: aws.Int64(s.Capacity.Write)}
	}
	for _, ix := range s.Indexes {
		proj := &types.Projection{ProjectionType: types.ProjectionType(ix.Projection)}
		if ix.Projection == "INCLUDE" {
			proj.NonKeyAttributes = ix.Include
		}
		if ix.Global {
			g := types.GlobalSecondaryIndex{IndexName: aws.String(ix.Name), KeySchema: keySchema(ix.PK, ix.SK), Projection: proj}
			if s.Billing == "PROVISIONED" {
				c := s.Capacity
				if ix.Capacity != nil {
					c = ix.Capacity
				}
				g.ProvisionedThroughput = &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(c.Read), WriteCapacityUnits: aws.Int64(c.Write)}
			}
			in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, g)
		} else {
			in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, types.LocalSecondaryIndex{IndexName: aws.String(ix.Name), KeySchema: keySchema(ix.PK, ix.SK), Projection: proj})
		}
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: attrs[n]})
	}
	return in
}
