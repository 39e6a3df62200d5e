package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/big"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// fakeSnapshot serves each entity's rows from memory, by table name, in
// key order (the first column is an integer key).
type fakeSnapshot struct {
	rows map[string][]value.Row
}

func (f *fakeSnapshot) Shards(_ context.Context, q *source.Query, n int) ([]source.Range, error) {
	rows := f.rows[q.Base.Name]
	if len(rows) == 0 {
		return []source.Range{source.Full}, nil
	}
	return source.IntShards(rows[0][0].I, rows[len(rows)-1][0].I, n), nil
}

func (f *fakeSnapshot) Count(context.Context, *source.Query, source.Range, bool) (int64, error) {
	return -1, nil
}

// ReadNested implements source.Snapshot; the fake has no nested tables.
func (f *fakeSnapshot) ReadNested(context.Context, *source.Query, []*source.Query, source.Range, []value.Value, int, func(value.Row, [][]value.Row) error) error {
	return errors.New("fake snapshot: no nested reads")
}

func (f *fakeSnapshot) Read(ctx context.Context, q *source.Query, r source.Range, after []value.Value, _ int, emit func(value.Row) error) error {
	for _, row := range f.rows[q.Base.Name] {
		id := row[0].I
		if (r.Lo != nil && id < r.Lo.I) || (r.Hi != nil && id >= r.Hi.I) || (after != nil && id <= after[0].I) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(append(value.Row(nil), row...)); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeSnapshot) Info() source.SnapshotInfo { return source.SnapshotInfo{} }
func (f *fakeSnapshot) Retryable(error) bool      { return false }
func (f *fakeSnapshot) Close() error              { return nil }

// fakeTable is an in-memory table with a string partition key PK and a
// sort key SK of type skType, answering BatchGetItem and Query like
// DynamoDB: Query in sort-key order (numbers by value), in pages.
type fakeTable struct {
	name   string
	skType string

	mu    sync.Mutex
	items map[string]map[string]types.AttributeValue // by PK NUL SK text
	// unprocessEvery leaves every n-th key of a BatchGetItem unprocessed
	// the first time it is asked for; throttleFirst fails the first n
	// BatchGetItem calls as throttled.
	unprocessEvery int
	unprocessed    map[string]bool
	throttleFirst  int
	pageSize       int

	gets, queries, scans, deletes atomic.Int64
	// projections are the Scan projections asked for.
	pmu         sync.Mutex
	projections []string
}

func newFakeTable(skType string) *fakeTable {
	return &fakeTable{name: "things", skType: skType, items: map[string]map[string]types.AttributeValue{}, unprocessed: map[string]bool{}, pageSize: 7}
}

func avText(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return canonicalNumber(v.Value)
	}
	panic(fmt.Sprintf("unexpected key value %T", av))
}

func (f *fakeTable) id(item map[string]types.AttributeValue) string {
	return avText(item["PK"]) + "\x00" + avText(item["SK"])
}

func (f *fakeTable) put(item map[string]types.AttributeValue) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items[f.id(item)] = item
}

func (f *fakeTable) get(pk, sk string) map[string]types.AttributeValue {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.items[pk+"\x00"+canonicalNumberIf(f.skType, sk)]
}

func canonicalNumberIf(typ, s string) string {
	if typ == "N" {
		return canonicalNumber(s)
	}
	return s
}

func (f *fakeTable) remove(pk, sk string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.items, pk+"\x00"+canonicalNumberIf(f.skType, sk))
}

func (f *fakeTable) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.gets.Add(1); n <= int64(f.throttleFirst) {
		return nil, &types.ProvisionedThroughputExceededException{Message: new(string)}
	}
	req := in.RequestItems[f.name]
	if len(req.Keys) > maxBatchGetKeys {
		return nil, errors.New("too many keys")
	}
	if req.ConsistentRead == nil || !*req.ConsistentRead {
		return nil, errors.New("expected consistent reads")
	}
	seen := map[string]bool{}
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}, UnprocessedKeys: map[string]types.KeysAndAttributes{}}
	var left []map[string]types.AttributeValue
	for i, k := range req.Keys {
		id := f.id(k)
		if seen[id] {
			return nil, errors.New("ValidationException: Provided list of item keys contains duplicates")
		}
		seen[id] = true
		if f.unprocessEvery > 0 && i%f.unprocessEvery == 0 && !f.unprocessed[id] {
			f.unprocessed[id] = true
			left = append(left, k)
			continue
		}
		if it, ok := f.items[id]; ok {
			out.Responses[f.name] = append(out.Responses[f.name], it)
		}
	}
	if len(left) > 0 {
		out.UnprocessedKeys[f.name] = types.KeysAndAttributes{Keys: left}
	}
	return out, nil
}

// skLess orders sort keys as DynamoDB does.
func (f *fakeTable) skLess(a, b types.AttributeValue) bool {
	if f.skType == "N" {
		x, _ := new(big.Rat).SetString(a.(*types.AttributeValueMemberN).Value)
		y, _ := new(big.Rat).SetString(b.(*types.AttributeValueMemberN).Value)
		return x.Cmp(y) < 0
	}
	return bytes.Compare([]byte(a.(*types.AttributeValueMemberS).Value), []byte(b.(*types.AttributeValueMemberS).Value)) < 0
}

func (f *fakeTable) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	f.queries.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	pk := avText(in.ExpressionAttributeValues[":pk"])
	sk, oneItem := in.ExpressionAttributeValues[":sk"]
	var all []map[string]types.AttributeValue
	for _, it := range f.items {
		if avText(it["PK"]) == pk && (!oneItem || avText(it["SK"]) == avText(sk)) {
			all = append(all, it)
		}
	}
	sort.Slice(all, func(i, j int) bool { return f.skLess(all[i]["SK"], all[j]["SK"]) })
	start := 0
	if in.ExclusiveStartKey != nil {
		for i, it := range all {
			if f.id(it) == f.id(in.ExclusiveStartKey) {
				start = i + 1
			}
		}
	}
	end := min(start+f.pageSize, len(all))
	out := &dynamodb.QueryOutput{Items: all[start:end]}
	if end < len(all) {
		out.LastEvaluatedKey = map[string]types.AttributeValue{"PK": all[end-1]["PK"], "SK": all[end-1]["SK"]}
	}
	return out, nil
}

// Scan answers a parallel Scan: segments by a hash of the key, pages of
// pageSize items, and the projection applied. It records the projections
// asked for.
func (f *fakeTable) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	f.scans.Add(1)
	f.pmu.Lock()
	f.projections = append(f.projections, resolveNames(*in.ProjectionExpression, in.ExpressionAttributeNames))
	f.pmu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id := range f.items {
		h := fnv.New32a()
		h.Write([]byte(id))
		if int32(h.Sum32()%uint32(*in.TotalSegments)) == *in.Segment {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	start := 0
	if in.ExclusiveStartKey != nil {
		start = sort.SearchStrings(ids, f.id(in.ExclusiveStartKey)) + 1
	}
	end := min(start+f.pageSize, len(ids))
	out := &dynamodb.ScanOutput{}
	attrs := strings.Split(resolveNames(*in.ProjectionExpression, in.ExpressionAttributeNames), ", ")
	for _, id := range ids[start:end] {
		item := map[string]types.AttributeValue{}
		for _, a := range attrs {
			if v, ok := f.items[id][a]; ok {
				item[a] = v
			}
		}
		out.Items = append(out.Items, item)
	}
	if end < len(ids) {
		last := f.items[ids[end-1]]
		out.LastEvaluatedKey = map[string]types.AttributeValue{"PK": last["PK"], "SK": last["SK"]}
	}
	return out, nil
}

func resolveNames(expr string, names map[string]string) string {
	for k, v := range names {
		expr = strings.ReplaceAll(expr, k, v)
	}
	return expr
}

// Delete implements Deleter.
func (f *fakeTable) Delete(_ context.Context, keys []map[string]types.AttributeValue) error {
	if len(keys) > maxBatchDeletes {
		return errors.New("too many deletes")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		delete(f.items, f.id(k))
		f.deletes.Add(1)
	}
	return nil
}

// compile compiles a mapping over in-memory tables whose first column is
// an integer primary key "id".
func compile(t *testing.T, yaml string, tables map[string][]source.Column) *mapping.Plan {
	t.Helper()
	cfg, err := mapping.Parse([]byte(yaml))
	require.NoError(t, err)
	schema := &mapping.Schema{Tables: map[source.TableRef]*source.Table{}}
	for name, cols := range tables {
		ref := source.TableRef{Name: name}
		schema.Tables[ref] = &source.Table{Ref: ref, PrimaryKey: []string{"id"}, Columns: cols, Unique: [][]string{{"id"}}}
	}
	p, err := mapping.Compile(cfg, schema, mapping.Options{})
	require.NoError(t, err)
	return p
}

// migrate writes every item the plan makes from snap into tbl, as a clean
// migration would.
func migrate(t *testing.T, p *mapping.Plan, snap *fakeSnapshot, tbl *fakeTable) {
	t.Helper()
	for _, ep := range p.Entities {
		for _, row := range snap.rows[ep.Query.Base.Name] {
			items, err := ep.Build(row, nil)
			if err != nil {
				continue
			}
			for _, it := range items {
				tbl.put(it.Attrs)
			}
		}
	}
}

func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }
