package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
)

// importStub answers the DynamoDB calls table import makes: DescribeTable
// (the table exists or not), ImportTable (recorded) and DescribeImport (in
// progress once, then completed). No local emulator implements
// ImportTable, so this checks the request dynafold sends through the real
// SDK, not what AWS does with it.
type importStub struct {
	mu          sync.Mutex
	tableExists bool
	calls       []string
	request     map[string]any
	describes   int
}

func (s *importStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, op)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	const arn = "arn:aws:dynamodb:us-east-1:111122223333:table/t/import/01"
	switch op {
	case "DescribeTable":
		if !s.tableExists {
			w.WriteHeader(400)
			io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}`)
			return
		}
		io.WriteString(w, `{"Table":{"TableName":"t","TableStatus":"ACTIVE","KeySchema":[{"AttributeName":"PK","KeyType":"HASH"},{"AttributeName":"SK","KeyType":"RANGE"}],"AttributeDefinitions":[{"AttributeName":"PK","AttributeType":"S"},{"AttributeName":"SK","AttributeType":"S"}]}}`)
	case "ImportTable":
		_ = json.Unmarshal(body, &s.request)
		io.WriteString(w, `{"ImportTableDescription":{"ImportArn":"`+arn+`","ImportStatus":"IN_PROGRESS"}}`)
	case "DescribeImport":
		s.describes++
		if s.describes == 1 {
			io.WriteString(w, `{"ImportTableDescription":{"ImportArn":"`+arn+`","ImportStatus":"IN_PROGRESS","ProcessedItemCount":4}}`)
			return
		}
		io.WriteString(w, `{"ImportTableDescription":{"ImportArn":"`+arn+`","ImportStatus":"COMPLETED","ProcessedItemCount":10,"ImportedItemCount":10,"ErrorCount":0,"CloudWatchLogGroupArn":"arn:aws:logs:us-east-1:111122223333:log-group:/aws-dynamodb/imports:*"}}`)
	default:
		w.WriteHeader(400)
		io.WriteString(w, `{"__type":"com.amazon.coral.service#UnknownOperationException","message":"`+op+`"}`)
	}
}

func TestTableImportSendsTheMappingsTable(t *testing.T) {
	t.Parallel()
	stub := &importStub{}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	r := clitest.Run(t, "", nil, "table", "import", "--config", clitest.RepoPath("configs/portfolios.yaml"), "--endpoint", srv.URL,
		"--table", "imported", "--from", "s3://exports/portfolios/2026/", "--poll", "1ms", "--output", "json")
	require.Equal(t, 0, r.Code, r.Output())
	require.Equal(t, []string{"DescribeTable", "ImportTable", "DescribeImport", "DescribeImport"}, stub.calls)

	q := stub.request
	require.Equal(t, "DYNAMODB_JSON", q["InputFormat"])
	require.Equal(t, "GZIP", q["InputCompressionType"])
	require.Equal(t, map[string]any{"S3Bucket": "exports", "S3KeyPrefix": "portfolios/2026/data/"}, q["S3BucketSource"])
	require.NotEmpty(t, q["ClientToken"])
	p := q["TableCreationParameters"].(map[string]any)
	require.Equal(t, "imported", p["TableName"])
	require.Equal(t, "PAY_PER_REQUEST", p["BillingMode"])
	require.Equal(t, []any{
		map[string]any{"AttributeName": "PK", "KeyType": "HASH"},
		map[string]any{"AttributeName": "SK", "KeyType": "RANGE"},
	}, p["KeySchema"])
	require.Equal(t, []any{
		map[string]any{"AttributeName": "GSI1PK", "AttributeType": "S"},
		map[string]any{"AttributeName": "PK", "AttributeType": "S"},
		map[string]any{"AttributeName": "SK", "AttributeType": "S"},
	}, p["AttributeDefinitions"])
	require.Equal(t, []any{map[string]any{
		"IndexName": "GSI1",
		"KeySchema": []any{
			map[string]any{"AttributeName": "GSI1PK", "KeyType": "HASH"},
			map[string]any{"AttributeName": "SK", "KeyType": "RANGE"},
		},
		"Projection": map[string]any{"ProjectionType": "ALL"},
	}}, p["GlobalSecondaryIndexes"])
	require.NotContains(t, p, "LocalSecondaryIndexes")

	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &res), r.Stdout)
	require.Equal(t, "COMPLETED", res["status"])
	require.EqualValues(t, 10, res["items_processed"])
	require.EqualValues(t, 10, res["items_imported"])
	require.EqualValues(t, 0, res["errors"])
	require.Contains(t, r.Stderr, "IN_PROGRESS, 4 items processed")
}

// ImportTable cannot create LSIs or write into an existing table: both are
// refused (exit 2) before any import starts.
func TestTableImportRefusals(t *testing.T) {
	t.Parallel()
	t.Run("lsi", func(t *testing.T) {
		stub := &importStub{}
		srv := httptest.NewServer(stub)
		defer srv.Close()
		r := clitest.Run(t, "", nil, "table", "import", "--config", clitest.RepoPath("configs/alleycat.yaml"), "--endpoint", srv.URL,
			"--table", "imported", "--from", "s3://exports/alleycat/")
		require.Equal(t, exitUsage, r.Code, r.Output())
		require.Contains(t, r.Stderr, "ImportTable cannot create local secondary indexes (index ByNumeric)")
		require.Contains(t, r.Stderr, "dynafold migrate")
		require.Empty(t, stub.calls, "nothing is sent")
	})
	t.Run("existing table", func(t *testing.T) {
		stub := &importStub{tableExists: true}
		srv := httptest.NewServer(stub)
		defer srv.Close()
		r := clitest.Run(t, "", nil, "table", "import", "--config", clitest.RepoPath("configs/portfolios.yaml"), "--endpoint", srv.URL,
			"--table", "imported", "--from", "s3://exports/portfolios/")
		require.Equal(t, exitUsage, r.Code, r.Output())
		require.Contains(t, r.Stderr, "table imported exists: ImportTable creates new tables only")
		require.Equal(t, []string{"DescribeTable"}, stub.calls, "no import is started")
	})
	t.Run("not s3", func(t *testing.T) {
		r := clitest.Run(t, "", nil, "table", "import", "--config", clitest.RepoPath("configs/portfolios.yaml"), "--from", "file:///tmp/x/")
		require.Equal(t, exitUsage, r.Code, r.Output())
		require.Contains(t, r.Stderr, "--from must be the s3://bucket/prefix/")
	})
}
