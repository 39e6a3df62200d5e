package statestore_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/statestore"
	"github.com/dynafold/dynafold/statestore/statestoretest"
)

// counting counts the requests a store sends.
type counting struct {
	statestore.API
	n atomic.Int64
}

func (c *counting) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.n.Add(1)
	return c.API.GetItem(ctx, in, o...)
}

func (c *counting) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.n.Add(1)
	return c.API.PutItem(ctx, in, o...)
}

func (c *counting) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.n.Add(1)
	return c.API.BatchGetItem(ctx, in, o...)
}

func (c *counting) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	c.n.Add(1)
	return c.API.BatchWriteItem(ctx, in, o...)
}

func TestDynamoConformance(t *testing.T) {
	statestoretest.Run(t, dynamoSubject(t, nil))
}

// dynamoSubject is another sync per case sharing one state table,
// wrapped by wrap when it is given.
func dynamoSubject(t *testing.T, wrap func(statestore.Store) statestore.Store) func(t *testing.T) statestoretest.Subject {
	c, table := statestore.StateTableForTest(t)
	return func(t *testing.T) statestoretest.Subject {
		name := statestore.SyncNameForTest(t)
		api := &counting{API: c}
		return statestoretest.Subject{
			Open: func(t *testing.T) statestore.Store {
				d, err := statestore.NewDynamo(api, table, name)
				require.NoError(t, err)
				if wrap != nil {
					return wrap(d)
				}
				return d
			},
			Requests: api.n.Load,
		}
	}
}

func TestParseStateURL(t *testing.T) {
	for _, c := range []struct {
		in, table string
		ok, bad   bool
	}{
		{in: ".dynafold/t.sync.json"},
		{in: "dynamodb://dynafold-state", table: "dynafold-state", ok: true},
		{in: "dynamodb://", ok: true, bad: true},
		{in: "dynamodb://t/x", ok: true, bad: true},
	} {
		table, ok, err := statestore.ParseURL(c.in)
		require.Equal(t, c.ok, ok, c.in)
		require.Equal(t, c.bad, err != nil, c.in)
		require.Equal(t, c.table, table, c.in)
	}
}

// ListKeys lists this sync's rows and no other's; a row stored by its
// hash cannot be named, so the listing is then not the whole index.
func TestDynamoListKeys(t *testing.T) {
	ctx := context.Background()
	c, table := statestore.StateTableForTest(t)
	name := statestore.SyncNameForTest(t)
	d, err := statestore.NewDynamo(c, table, name)
	require.NoError(t, err)
	other, err := statestore.NewDynamo(c, table, name+"_other")
	require.NoError(t, err)
	var entries []statestore.Entry
	want := map[string][]string{}
	for i := range 300 {
		e := statestore.Entry{Entity: "db#x", Row: []byte{1, byte(i), byte(i >> 8)}, Keys: []string{fmt.Sprint("K", i), "G"}}
		entries = append(entries, e)
		want[string(e.Row)] = e.Keys
	}
	require.NoError(t, d.SetKeys(ctx, entries))
	require.NoError(t, other.SetKeys(ctx, []statestore.Entry{{Entity: "db#x", Row: []byte{9}, Keys: []string{"THEIRS"}}}))

	list := func(limit int) (map[string][]string, bool) {
		var mu sync.Mutex
		got := map[string][]string{}
		all, err := d.ListKeys(ctx, limit, func(entity string, row []byte, keys []string) {
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, "db#x", entity)
			got[string(row)] = keys
		})
		require.NoError(t, err)
		return got, all
	}
	got, all := list(100_000)
	require.True(t, all)
	require.Equal(t, want, got)

	got, all = list(100)
	require.False(t, all, "stopped at its limit")
	require.LessOrEqual(t, len(got), 100)

	long := statestore.Entry{Entity: "db#x", Row: bytes.Repeat([]byte{2}, 2000), Keys: []string{"LONG"}}
	require.NoError(t, d.SetKeys(ctx, []statestore.Entry{long}))
	got, all = list(100_000)
	require.False(t, all, "a hashed row cannot be named")
	require.Equal(t, want, got)
}
