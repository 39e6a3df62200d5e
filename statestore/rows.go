package statestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	bolt "go.etcd.io/bbolt"
)

// RowLister is a store that can list the rows its index records for one
// entity. Sync needs it when rows left a table without row events (a
// TRUNCATE, a partition detached): the rows the index holds and the source
// no longer has are the ones whose items must go, whoever else's items
// the table holds beside them.
type RowLister interface {
	// ListRows calls fn, from the caller's goroutine, for every row of
	// entity the index records, with the row as the store names it (see
	// RowName) and its item keys. fn may write the index (SetKeys): the
	// listing holds no transaction while fn runs. A row fn is given may be
	// passed back to SetKeys as it is.
	ListRows(ctx context.Context, entity string, fn func(row []byte, keys []string) error) error
	// RowName is the name ListRows gives the row encoded as row: the row
	// itself, or what the store keeps in its place.
	RowName(row []byte) []byte
}

var (
	_ RowLister = (*File)(nil)
	_ RowLister = (*Dynamo)(nil)
	_ RowLister = (*Cached)(nil)
)

// listPage is how many rows one read transaction of the local index
// lists: the rows are copied out, so that fn runs outside it (bbolt
// cannot grow its file under an open read transaction of the same
// process). A variable for the tests, which list over several pages.
var listPage = 4096

// ListRows implements RowLister, a page of rows per read transaction.
func (f *File) ListRows(ctx context.Context, entity string, fn func(row []byte, keys []string) error) error {
	var after []byte
	for {
		type entry struct {
			row  []byte
			keys []string
		}
		var page []entry
		err := f.index.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte(entity))
			if b == nil {
				return nil
			}
			c := b.Cursor()
			k, v := c.First()
			if after != nil {
				if k, v = c.Seek(after); bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for ; k != nil && len(page) < listPage; k, v = c.Next() {
				page = append(page, entry{row: bytes.Clone(k), keys: decodeKeys(v)})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("listing the row index: %w", err)
		}
		for _, e := range page {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(e.row, e.keys); err != nil {
				return err
			}
		}
		if len(page) < listPage {
			return nil
		}
		after = page[len(page)-1].row
	}
}

// RowName implements RowLister: the local index keeps every row as it is.
func (f *File) RowName(row []byte) []byte { return row }

// ListRows implements RowLister: a consistent Scan of the state table for
// the entity's row items, one page at a time (fn runs between pages).
func (d *Dynamo) ListRows(ctx context.Context, entity string, fn func(row []byte, keys []string) error) error {
	prefix := d.name + "#ix#" + entity + "#"
	in := &dynamodb.ScanInput{
		TableName:                 &d.table,
		ConsistentRead:            aws.Bool(true),
		ProjectionExpression:      aws.String("#pk, #keys"),
		FilterExpression:          aws.String("begins_with(#pk, :prefix)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#keys": attrKeys},
		ExpressionAttributeValues: map[string]types.AttributeValue{":prefix": &types.AttributeValueMemberS{Value: prefix}},
	}
	for {
		out, err := d.api.Scan(ctx, in)
		if err != nil {
			return fmt.Errorf("listing the row index of %s in %s: %w", d.name, d.table, err)
		}
		for _, it := range out.Items {
			pk, _ := it[attrPK].(*types.AttributeValueMemberS)
			b, _ := it[attrKeys].(*types.AttributeValueMemberB)
			if pk == nil || b == nil {
				continue
			}
			// A row stored by its hash is named by "sha256:" and the
			// hash, which rowPK keeps as it is (it is short).
			row, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(pk.Value, prefix))
			if err != nil {
				return fmt.Errorf("listing the row index of %s: row item %q: %w", d.name, pk.Value, err)
			}
			if err := fn(row, decodeKeys(b.Value)); err != nil {
				return err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// RowName implements RowLister: a row longer than maxKeyBytes is kept by
// its SHA-256 (see rowPK).
func (d *Dynamo) RowName(row []byte) []byte {
	if len(row) <= maxKeyBytes {
		return row
	}
	sum := sha256.Sum256(row)
	return append([]byte(hashedPrefix), sum[:]...)
}

// ListRows implements RowLister through the store behind the cache, which
// every SetKeys writes through to. The cache is emptied after: a row the
// store keeps by its hash is listed, and may be written, under that name,
// which the cache would not know as the row's.
func (c *Cached) ListRows(ctx context.Context, entity string, fn func(row []byte, keys []string) error) error {
	if err := c.wait(ctx); err != nil {
		return err
	}
	l, ok := c.Store.(RowLister)
	if !ok {
		return fmt.Errorf("the row index in %s cannot list its rows", c.Where())
	}
	defer func() {
		c.mu.Lock()
		c.cur, c.old = newGen(), newGen()
		c.forgets++
		c.complete = false
		c.mu.Unlock()
	}()
	return l.ListRows(ctx, entity, fn)
}

// RowName implements RowLister.
func (c *Cached) RowName(row []byte) []byte {
	if l, ok := c.Store.(RowLister); ok {
		return l.RowName(row)
	}
	return row
}
