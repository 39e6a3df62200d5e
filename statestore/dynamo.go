package statestore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/retry"
	"github.com/dynafold/dynafold/sink"
)

// DynamoDB limits the store keeps to.
const (
	// maxBatchGet: BatchGetItem accepts at most 100 keys.
	maxBatchGet = 100
	// maxBatchWrite: BatchWriteItem accepts at most 25 requests.
	maxBatchWrite = 25
	// maxKeyBytes: a partition key is at most 2048 bytes; row keys longer
	// than this are stored by their SHA-256.
	maxKeyBytes = 1024
	// hashedPrefix starts the stored key of a row longer than maxKeyBytes.
	hashedPrefix = "sha256:"
	// maxItemBytes: an item is at most 400 KB.
	maxItemBytes = 400 << 10
	// inFlight bounds the batch requests one call keeps in flight.
	inFlight = 8
)

// Attribute names of the state table. The table's only key is pk, a
// string; every item of one sync starts with "<sync>#".
const (
	attrPK    = "pk"
	attrDoc   = "doc"
	attrKeys  = "keys"
	attrFence = "fence"
)

// API is the part of the DynamoDB client the store uses.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// Dynamo keeps a sync's state as items of a DynamoDB table that many
// syncs may share, each under its own name: the state document, the load
// checkpoint, the lease and one item per indexed row. Every write is
// acknowledged before its call returns, so what SetKeys recorded is
// durable before any later WriteState. Its writes pass only while its
// guard (the lease) says this sync holds the state; the state document is
// also written on condition that no holder with a higher fencing counter
// wrote it since.
type Dynamo struct {
	api   API
	table string
	name  string
	// guard, when set, is asked before every write; an error stops it.
	guard func() error
	fence atomic.Int64
}

var (
	_ Store  = (*Dynamo)(nil)
	_ Lister = (*Dynamo)(nil)
)

// ParseURL splits dynamodb://TABLE into the table's name; ok is false for
// anything else (a local path).
func ParseURL(s string) (table string, ok bool, err error) {
	if !strings.HasPrefix(s, "dynamodb://") {
		return "", false, nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", true, fmt.Errorf("--state %q: want dynamodb://TABLE", s)
	}
	return u.Host, true, nil
}

// NewDynamo returns the state of the sync called name in table.
func NewDynamo(api API, table, name string) (*Dynamo, error) {
	if name == "" || strings.Contains(name, "#") {
		return nil, fmt.Errorf("sync name %q: it must be set and must not contain '#'", name)
	}
	return &Dynamo{api: api, table: table, name: name}, nil
}

// Guard makes every write first call check; a write fails with its error.
func (d *Dynamo) Guard(check func() error) { d.guard = check }

// SetFence sets the fencing counter the state document is written with.
func (d *Dynamo) SetFence(n int64) { d.fence.Store(n) }

// Where implements Store.
func (d *Dynamo) Where() string { return "dynamodb://" + d.table + " (sync " + d.name + ")" }

// Table is the state table's name; Name the sync's.
func (d *Dynamo) Table() string { return d.table }
func (d *Dynamo) Name() string  { return d.name }

func (d *Dynamo) pk(kind string) string { return d.name + "#" + kind }

// rowPK is a row's item: sync, entity and the row's key in base64 (by its
// SHA-256 when long). Rows spread over partitions by their key.
func (d *Dynamo) rowPK(entity string, row []byte) string {
	if len(row) > maxKeyBytes {
		sum := sha256.Sum256(row)
		row = append([]byte(hashedPrefix), sum[:]...)
	}
	return d.name + "#ix#" + entity + "#" + base64.RawURLEncoding.EncodeToString(row)
}

func key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: &types.AttributeValueMemberS{Value: pk}}
}

func (d *Dynamo) check() error {
	if d.guard == nil {
		return nil
	}
	return d.guard()
}

func (d *Dynamo) readDoc(ctx context.Context, kind string) ([]byte, error) {
	out, err := d.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.table, Key: key(d.pk(kind)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("reading the sync %s of %s from %s: %w", kind, d.name, d.table, err)
	}
	if b, ok := out.Item[attrDoc].(*types.AttributeValueMemberB); ok {
		return b.Value, nil
	}
	return nil, nil
}

// ReadState implements Store.
func (d *Dynamo) ReadState(ctx context.Context) ([]byte, error) { return d.readDoc(ctx, "state") }

// WriteState implements Store. It is conditioned on the fencing counter:
// once a newer holder wrote the state, an older one's write fails with
// ErrFenced.
func (d *Dynamo) WriteState(ctx context.Context, doc []byte) error {
	if err := d.check(); err != nil {
		return err
	}
	if len(doc) > maxItemBytes-1024 {
		return fmt.Errorf("the sync state of %s is %d bytes, more than a DynamoDB item holds", d.name, len(doc))
	}
	fence := &types.AttributeValueMemberN{Value: fmt.Sprint(d.fence.Load())}
	item := key(d.pk("state"))
	item[attrDoc] = &types.AttributeValueMemberB{Value: doc}
	item[attrFence] = fence
	_, err := d.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &d.table, Item: item,
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #fence <= :fence"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#fence": attrFence},
		ExpressionAttributeValues: map[string]types.AttributeValue{":fence": fence},
	})
	var cond *types.ConditionalCheckFailedException
	if errors.As(err, &cond) {
		return ErrFenced
	}
	if err != nil {
		return fmt.Errorf("saving the sync state of %s to %s: %w", d.name, d.table, err)
	}
	return nil
}

// Keys implements Store: consistent BatchGetItem reads, 100 rows each.
func (d *Dynamo) Keys(ctx context.Context, entity string, rows [][]byte) ([][]string, error) {
	out := make([][]string, len(rows))
	at := make(map[string][]int, len(rows))
	var pks []string
	for i, r := range rows {
		pk := d.rowPK(entity, r)
		if _, ok := at[pk]; !ok {
			pks = append(pks, pk)
		}
		at[pk] = append(at[pk], i)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	results := make([]map[string][]string, (len(pks)+maxBatchGet-1)/maxBatchGet)
	for n := 0; n*maxBatchGet < len(pks); n++ {
		chunk := pks[n*maxBatchGet : min((n+1)*maxBatchGet, len(pks))]
		g.Go(func() error {
			got, err := d.batchGet(gctx, chunk)
			results[n] = got
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("reading the row index of %s from %s: %w", d.name, d.table, err)
	}
	for _, res := range results {
		for pk, keys := range res {
			for _, i := range at[pk] {
				out[i] = keys
			}
		}
	}
	return out, nil
}

// batchGet reads pks (at most 100) consistently. Unprocessed keys are
// sent again for as long as it takes; an error is returned as it is, to
// sync's handling of faults (a DynamoDB outage is waited out there, with
// the state and readiness saying so), not retried here.
func (d *Dynamo) batchGet(ctx context.Context, pks []string) (map[string][]string, error) {
	keys := make([]map[string]types.AttributeValue, len(pks))
	for i, pk := range pks {
		keys[i] = key(pk)
	}
	req := map[string]types.KeysAndAttributes{d.table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
	got := map[string][]string{}
	err := retry.Do(ctx, unprocessed, sink.RetryClass, func(ctx context.Context) (bool, error) {
		out, err := d.api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return false, retry.Final(err)
		}
		for _, it := range out.Responses[d.table] {
			pk, _ := it[attrPK].(*types.AttributeValueMemberS)
			b, _ := it[attrKeys].(*types.AttributeValueMemberB)
			if pk != nil && b != nil {
				got[pk.Value] = decodeKeys(b.Value)
			}
		}
		left := out.UnprocessedKeys[d.table].Keys
		progress := len(left) < len(req[d.table].Keys)
		if len(left) == 0 {
			return false, nil
		}
		req = map[string]types.KeysAndAttributes{d.table: {Keys: left, ConsistentRead: aws.Bool(true)}}
		return progress, sink.ErrUnprocessed
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// ListKeys implements Lister: a consistent parallel Scan of the state
// table (inFlight segments) for this sync's row items. A Scan reads 1 MB
// a request, so at some 130 bytes an entry it costs about one
// thirtieth of the read units of reading the rows one by one (a
// consistent read of an item costs a whole unit), and against dynalite
// it serves about four times the rows a second (figures in
// docs/sync-state.md). In a state table that many syncs share it reads
// theirs too and filters them out, so it also stops once it has read
// twice limit items of the table: a listing costs at most that.
func (d *Dynamo) ListKeys(ctx context.Context, limit int, fn func(entity string, row []byte, keys []string)) (bool, error) {
	prefix := d.name + "#ix#"
	var listed, scanned atomic.Int64
	var unnamed atomic.Bool
	g, gctx := errgroup.WithContext(ctx)
	for seg := range inFlight {
		g.Go(func() error {
			in := &dynamodb.ScanInput{
				TableName:                 &d.table,
				ConsistentRead:            aws.Bool(true),
				Segment:                   aws.Int32(int32(seg)),
				TotalSegments:             aws.Int32(inFlight),
				ProjectionExpression:      aws.String("#pk, #keys"),
				FilterExpression:          aws.String("begins_with(#pk, :prefix)"),
				ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#keys": attrKeys},
				ExpressionAttributeValues: map[string]types.AttributeValue{":prefix": &types.AttributeValueMemberS{Value: prefix}},
			}
			for {
				out, err := d.api.Scan(gctx, in)
				if err != nil {
					return err
				}
				if scanned.Add(int64(out.ScannedCount)) > 2*int64(limit) {
					return errLimit
				}
				for _, it := range out.Items {
					if listed.Add(1) > int64(limit) {
						return errLimit
					}
					pk, _ := it[attrPK].(*types.AttributeValueMemberS)
					b, _ := it[attrKeys].(*types.AttributeValueMemberB)
					if pk == nil || b == nil {
						continue
					}
					entity, row, ok := rowOfPK(strings.TrimPrefix(pk.Value, prefix))
					if !ok {
						unnamed.Store(true)
						continue
					}
					fn(entity, row, decodeKeys(b.Value))
				}
				if len(out.LastEvaluatedKey) == 0 {
					return nil
				}
				in.ExclusiveStartKey = out.LastEvaluatedKey
			}
		})
	}
	switch err := g.Wait(); {
	case errors.Is(err, errLimit):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("listing the row index of %s in %s: %w", d.name, d.table, err)
	}
	return !unnamed.Load(), nil
}

// errLimit stops ListKeys's segments once it has listed its limit.
var errLimit = errors.New("the listing reached its limit")

// rowOfPK is the entity and row of a row item's key after "<sync>#ix#"
// (see rowPK); ok is false for a row stored by its SHA-256, which cannot
// be named. The row's base64 has no '#', so the entity is all before the
// last one.
func rowOfPK(s string) (entity string, row []byte, ok bool) {
	i := strings.LastIndexByte(s, '#')
	if i < 0 {
		return "", nil, false
	}
	row, err := base64.RawURLEncoding.DecodeString(s[i+1:])
	if err != nil || (len(row) == len(hashedPrefix)+sha256.Size && strings.HasPrefix(string(row), hashedPrefix)) {
		return "", nil, false
	}
	return s[:i], row, true
}

// SetKeys implements Store: BatchWriteItem, 25 rows each, acknowledged
// (unprocessed items retried) before it returns.
func (d *Dynamo) SetKeys(ctx context.Context, entries []Entry) error {
	reqs := make([]types.WriteRequest, 0, len(entries))
	for _, e := range entries {
		pk := key(d.rowPK(e.Entity, e.Row))
		if len(e.Keys) == 0 {
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: pk}})
			continue
		}
		pk[attrKeys] = &types.AttributeValueMemberB{Value: encodeKeys(e.Keys)}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: pk}})
	}
	if err := d.writeAll(ctx, reqs); err != nil {
		return fmt.Errorf("recording the row index of %s in %s: %w", d.name, d.table, err)
	}
	return nil
}

// writeAll sends reqs in batches, some in flight at once, and returns once
// every one is acknowledged.
//
// Each batch is a window of reqs, whose values (encodeKeys) are allocated
// for this call and not changed before Wait returns; a retry sends the
// same values, or the SDK's own unprocessed ones.
func (d *Dynamo) writeAll(ctx context.Context, reqs []types.WriteRequest) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	for start := 0; start < len(reqs); start += maxBatchWrite {
		batch := reqs[start:min(start+maxBatchWrite, len(reqs))]
		g.Go(func() error { return d.batchWrite(gctx, batch) })
	}
	return g.Wait()
}

// batchWrite writes batch, sending unprocessed items again for as long as
// it takes; an error goes to sync's handling of faults, as batchGet's.
func (d *Dynamo) batchWrite(ctx context.Context, batch []types.WriteRequest) error {
	req := map[string][]types.WriteRequest{d.table: batch}
	return retry.Do(ctx, unprocessed, sink.RetryClass, func(ctx context.Context) (bool, error) {
		// Asked before every request: a sync that lost its lease sends
		// nothing more, retries included.
		if err := d.check(); err != nil {
			return false, retry.Final(err)
		}
		out, err := d.api.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: req})
		if err != nil {
			return false, retry.Final(err) // the SDK has retried what it retries
		}
		left := out.UnprocessedItems[d.table]
		progress := len(left) < len(req[d.table])
		if len(left) == 0 {
			return false, nil
		}
		req = map[string][]types.WriteRequest{d.table: left}
		return progress, sink.ErrUnprocessed
	})
}

// unprocessed retries the row index's unprocessed keys and items (a
// partition over its capacity) for as long as it takes: sync cannot go on
// without its index. Errors are the SDK's, after its own retries.
var unprocessed = retry.Policy{Backoff: retry.Backoff{Base: 50 * time.Millisecond, Max: 2 * time.Second, Rand: retry.EqualJitter}}

// ClearKeys implements Store: a Scan of the table for this sync's row
// items, then deletes. It is rare (a resnapshot) and reads the whole
// state table.
func (d *Dynamo) ClearKeys(ctx context.Context) error {
	if _, err := d.deletePrefix(ctx, d.name+"#ix#"); err != nil {
		return fmt.Errorf("clearing the row index of %s in %s: %w", d.name, d.table, err)
	}
	return nil
}

// deletePrefix deletes every item whose pk starts with prefix and returns
// how many it deleted.
func (d *Dynamo) deletePrefix(ctx context.Context, prefix string) (int, error) {
	n := 0
	in := &dynamodb.ScanInput{
		TableName:                 &d.table,
		ConsistentRead:            aws.Bool(true),
		ProjectionExpression:      aws.String("#pk"),
		FilterExpression:          aws.String("begins_with(#pk, :prefix)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":prefix": &types.AttributeValueMemberS{Value: prefix}},
	}
	for {
		out, err := d.api.Scan(ctx, in)
		if err != nil {
			return n, err
		}
		reqs := make([]types.WriteRequest, 0, len(out.Items))
		for _, it := range out.Items {
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{attrPK: it[attrPK]}}})
		}
		if err := d.writeAll(ctx, reqs); err != nil {
			return n, err
		}
		n += len(reqs)
		if len(out.LastEvaluatedKey) == 0 {
			return n, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// Load implements Store: the load checkpoint is one item.
func (d *Dynamo) Load() checkpoint.Store {
	return checkpoint.NewBlobStore(docItem{d: d, kind: "load"}, d.Where()+" load checkpoint")
}

// docItem keeps a checkpoint document as one item.
type docItem struct {
	d    *Dynamo
	kind string
}

func (b docItem) Read(ctx context.Context) ([]byte, error) { return b.d.readDoc(ctx, b.kind) }

func (b docItem) Write(ctx context.Context, doc []byte) error {
	if err := b.d.check(); err != nil {
		return err
	}
	if len(doc) > maxItemBytes-1024 {
		return fmt.Errorf("the load checkpoint of %s is %d bytes, more than a DynamoDB item holds (fewer shards: a lower --concurrency)", b.d.name, len(doc))
	}
	item := key(b.d.pk(b.kind))
	item[attrDoc] = &types.AttributeValueMemberB{Value: doc}
	if _, err := b.d.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &b.d.table, Item: item}); err != nil {
		return fmt.Errorf("saving the load checkpoint of %s to %s: %w", b.d.name, b.d.table, err)
	}
	return nil
}

func (b docItem) Delete(ctx context.Context) error {
	if err := b.d.check(); err != nil {
		return err
	}
	if _, err := b.d.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.d.table, Key: key(b.d.pk(b.kind))}); err != nil {
		return fmt.Errorf("deleting the load checkpoint of %s from %s: %w", b.d.name, b.d.table, err)
	}
	return nil
}

// Remove implements Store: every item of this sync, the lease included.
func (d *Dynamo) Remove(ctx context.Context) ([]string, error) {
	n, err := d.deletePrefix(ctx, d.name+"#")
	var missing *types.ResourceNotFoundException
	if errors.As(err, &missing) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("removing the sync state of %s from %s: %w", d.name, d.table, err)
	}
	if n == 0 {
		return nil, nil
	}
	return []string{fmt.Sprintf("%d items of sync %s in state table %s", n, d.name, d.table)}, nil
}

// Close implements Store.
func (d *Dynamo) Close() error { return nil }

// CreateTable creates the state table (on-demand, key pk) unless it
// exists, and waits until it is active. created says whether it did.
func CreateTable(ctx context.Context, api API, table string, wait time.Duration) (created bool, err error) {
	_, err = api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
	var missing *types.ResourceNotFoundException
	switch {
	case err == nil:
		return false, checkTable(ctx, api, table)
	case !errors.As(err, &missing):
		return false, fmt.Errorf("describing the state table %s: %w", table, err)
	}
	_, err = api.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &table,
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash}},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return false, fmt.Errorf("creating the state table %s: %w", table, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(api)
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: &table}, wait); err != nil {
		return false, fmt.Errorf("waiting for the state table %s to become active: %w", table, err)
	}
	return err == nil, checkTable(ctx, api, table)
}

// checkTable refuses a table whose key is not the state table's.
func checkTable(ctx context.Context, api API, table string) error {
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
	if err != nil {
		return fmt.Errorf("describing the state table %s: %w", table, err)
	}
	ks := out.Table.KeySchema
	if len(ks) != 1 || aws.ToString(ks[0].AttributeName) != attrPK {
		return fmt.Errorf("table %s is not a dynafold state table: its key must be the string %q alone (dynafold table create --state %s on a new name)", table, attrPK, table)
	}
	return nil
}

// Lease returns the lease of this sync's state for holder owner, and
// makes every write of the store ask it first (Guard): a sync that no
// longer holds the lease writes nothing more.
func (d *Dynamo) Lease(owner string, duration, fence time.Duration) *Lease {
	l := NewLease(d.api, d.table, d.name, owner, duration, fence)
	d.Guard(l.Check)
	return l
}
