// Package ddbnoop is a DynamoDB-protocol endpoint that accepts writes and
// stores nothing. It exists to measure dynafold's own throughput ceiling
// without a database in the way, and to exercise dynafold's handling of
// DynamoDB's limits: it validates BatchWriteItem calls as DynamoDB does
// (25 requests, duplicate keys, missing or mistyped keys, 400 KB items),
// computes item sizes and write units by DynamoDB's rules, and can simulate
// provisioned capacity with per-table and per-partition-key token buckets
// (see capacity.go), answering with UnprocessedItems or
// ProvisionedThroughputExceededException like the real service.
//
// It speaks the awsJson 1.0 protocol that aws-sdk-go-v2 uses: POST / with
// X-Amz-Target: DynamoDB_20120810.<Operation>. Supported operations:
// BatchWriteItem, CreateTable, DescribeTable, DeleteTable, ListTables,
// UpdateTimeToLive, DescribeTimeToLive, and Query, Scan and BatchGetItem,
// which always find nothing. Signatures are not checked. Besides the API,
// GET /stats returns Stats as JSON and POST /stats/reset zeroes them.
package ddbnoop

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/dynafold/dynafold/internal/localserve"
)

// maxBody is DynamoDB's 16 MB request size limit.
const maxBody = 16 << 20

// Options configures a Server. The zero value is an unthrottled server with
// no tables.
type Options struct {
	// WCU, if positive, limits each table to WCU write units per second with
	// a burst of one second's worth (WCU units).
	WCU float64
	// PartitionWCU, if positive, limits each partition-key value to
	// PartitionWCU write units per second, burst one second's worth.
	// DynamoDB's real per-partition limit is 1000.
	PartitionWCU float64
	// Tables are declared at start, as if created with CreateTable.
	Tables []TableSpec
	// Now replaces time.Now, so tests can freeze or step the clock that
	// refills the capacity buckets.
	Now func() time.Time
}

// TableSpec pre-declares a table whose keys are all strings (S).
type TableSpec struct {
	Name string
	PK   string
	SK   string // empty: no sort key
	GSIs []IndexSpec
}

// IndexSpec declares a global secondary index projecting ALL attributes.
type IndexSpec struct {
	Name string
	PK   string
	SK   string // empty: no sort key
}

// ParseIndexSpec parses the -gsi flag syntax NAME:PK[:SK].
func ParseIndexSpec(s string) (IndexSpec, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return IndexSpec{}, errors.New("GSI must be NAME:PK or NAME:PK:SK, got " + s)
	}
	spec := IndexSpec{Name: parts[0], PK: parts[1]}
	if len(parts) == 3 {
		spec.SK = parts[2]
	}
	return spec, nil
}

// createInput converts a TableSpec into the CreateTable request it stands
// for. Provisioned billing is reported when wcu is set, so DescribeTable
// tells a client what it is up against.
func (ts TableSpec) createInput(wcu float64) createTableInput {
	in := createTableInput{TableName: ts.Name, BillingMode: "PAY_PER_REQUEST"}
	if wcu > 0 {
		in.BillingMode = "PROVISIONED"
		in.ProvisionedThroughput = &throughput{ReadCapacityUnits: int64(wcu), WriteCapacityUnits: int64(wcu)}
	}
	defs := map[string]bool{}
	addKeys := func(pk, sk string) []keySchemaElement {
		ks := []keySchemaElement{{AttributeName: pk, KeyType: "HASH"}}
		if sk != "" {
			ks = append(ks, keySchemaElement{AttributeName: sk, KeyType: "RANGE"})
		}
		for _, k := range ks {
			if !defs[k.AttributeName] {
				defs[k.AttributeName] = true
				in.AttributeDefinitions = append(in.AttributeDefinitions,
					attributeDefinition{AttributeName: k.AttributeName, AttributeType: "S"})
			}
		}
		return ks
	}
	in.KeySchema = addKeys(ts.PK, ts.SK)
	for _, g := range ts.GSIs {
		ix := indexInput{IndexName: g.Name, KeySchema: addKeys(g.PK, g.SK), Projection: projection{ProjectionType: "ALL"}}
		if in.ProvisionedThroughput != nil {
			ix.ProvisionedThroughput = in.ProvisionedThroughput
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, ix)
	}
	return in
}

// Server is the no-op DynamoDB endpoint. It is an http.Handler.
type Server struct {
	now      func() time.Time
	tables   registry
	capacity *capacity
	stats    counters
}

// New returns a Server. It panics if a pre-declared table is invalid, which
// is a programming or flag error; use NewServer to get the error instead.
func New(opts Options) *Server {
	s, err := NewServer(opts)
	if err != nil {
		panic(err)
	}
	return s
}

// NewServer is New returning an error for an invalid pre-declared table.
func NewServer(opts Options) (*Server, error) {
	s := &Server{
		now:      opts.Now,
		tables:   registry{tables: map[string]*table{}},
		capacity: newCapacity(opts.WCU, opts.PartitionWCU),
	}
	if s.now == nil {
		s.now = time.Now
	}
	for _, ts := range opts.Tables {
		t, err := newTable(ts.createInput(opts.WCU), s.now())
		if err == nil {
			err = s.tables.add(t)
		}
		if err != nil {
			return nil, errors.New("ddbnoop: table " + ts.Name + ": " + err.Message)
		}
	}
	return s, nil
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats { return s.stats.snapshot(s.now()) }

// ResetStats zeroes the counters.
func (s *Server) ResetStats() { s.stats.reset() }

// ConnState counts new connections (localserve.ConnWatcher): a client that
// keeps its connections alive opens about one per request in flight, once.
func (s *Server) ConnState(_ net.Conn, state http.ConnState) {
	if state == http.StateNew {
		s.stats.connections.Add(1)
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/stats" && r.Method == http.MethodGet:
		w.Header()["Content-Type"] = contentTypeText
		_ = json.NewEncoder(w).Encode(s.Stats())
		return
	case r.URL.Path == "/stats/reset" && r.Method == http.MethodPost:
		s.ResetStats()
		w.WriteHeader(http.StatusNoContent)
		return
	case r.Method != http.MethodPost:
		// DynamoDB answers health checks on GET / this way.
		_, _ = io.WriteString(w, "healthy: dynamodb.us-east-1.amazonaws.com ")
		return
	}
	s.stats.requests.Add(1)
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	if !ok {
		writeError(w, &apiError{Type: errTypeUnknownOperation})
		return
	}
	b := batchPool.Get().(*batch)
	defer batchPool.Put(b)
	b.reset()
	var err error
	if b.body, err = readBody(r, b.body[:0]); err != nil {
		writeError(w, &apiError{Type: errTypeSerialization, Message: err.Error()})
		return
	}
	switch op {
	case "BatchWriteItem":
		s.batchWriteItem(w, b)
	case "CreateTable":
		s.createTable(w, b.body)
	case "DescribeTable":
		s.describeTable(w, b.body)
	case "DeleteTable":
		s.deleteTable(w, b.body)
	case "ListTables":
		s.listTables(w, b.body)
	case "UpdateTimeToLive":
		s.updateTimeToLive(w, b.body)
	case "DescribeTimeToLive":
		s.describeTimeToLive(w, b.body)
	case "Query", "Scan":
		s.emptyRead(w, b.body)
	case "BatchGetItem":
		s.batchGetItem(w, b.body)
	default:
		writeError(w, &apiError{Type: errTypeUnknownOperation})
	}
}

// readBody reads the request body into buf, growing it at most once when
// Content-Length is known.
func readBody(r *http.Request, buf []byte) ([]byte, error) {
	if n := r.ContentLength; n > maxBody {
		return buf, errors.New("request body exceeds 16 MB")
	} else if n > 0 && int64(cap(buf)) < n {
		buf = make([]byte, 0, n)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) > maxBody {
			return buf, errors.New("request body exceeds 16 MB")
		}
	}
}

// Start serves s on loopback with an OS-chosen port and returns its base
// URL and a function that stops it at once (see localserve.Start).
func (s *Server) Start() (url string, stop func(), err error) { return localserve.Start(s) }

// Start is NewServer(opts) followed by Start, for tests and benchmarks that
// only need the endpoint (GET /stats still reports the counters).
func Start(opts Options) (url string, stop func(), err error) {
	s, err := NewServer(opts)
	if err != nil {
		return "", nil, err
	}
	return s.Start()
}

// ListenAndServe serves s on addr until ctx is done (see
// localserve.ListenAndServe).
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(url string)) error {
	return localserve.ListenAndServe(ctx, s, addr, ready)
}
