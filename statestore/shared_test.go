package statestore

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
)

// shared is the one state table of the package's tests, created by the
// first test that needs it and deleted by TestMain: every test keeps its
// items under its own sync name, as syncs sharing a table do.
var shared struct {
	once   sync.Once
	client *dynamodb.Client
	table  string
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.client != nil {
		_, _ = shared.client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &shared.table})
	}
	os.Exit(code)
}

// stateTable returns the shared state table, created (and found again by
// a second create) on first use.
func stateTable(t *testing.T) (*dynamodb.Client, string) {
	c := testenv.DynamoClient(t)
	shared.once.Do(func() {
		table := testenv.NewTableName(t)
		created, err := CreateTable(context.Background(), c, table, time.Minute)
		if err == nil && !created {
			err = errors.New("a new state table was not created")
		}
		if err == nil {
			created, err = CreateTable(context.Background(), c, table, time.Minute)
			if err == nil && created {
				err = errors.New("a second create did not find the table")
			}
		}
		shared.client, shared.table, shared.err = c, table, err
	})
	require.NoError(t, shared.err)
	return shared.client, shared.table
}

// syncName is a sync name unique to the test.
func syncName(t *testing.T) string {
	return strings.NewReplacer("/", "_", "#", "_").Replace(t.Name()) + "_" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// For the external tests (statestore_test).
var (
	StateTableForTest = stateTable
	SyncNameForTest   = syncName
)
