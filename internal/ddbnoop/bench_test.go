package ddbnoop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// benchItem is a realistic single-table-design row of about 500 bytes: keys,
// a GSI key, strings, numbers, a bool, a set, a map and a null.
func benchItem(n int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"PK":       s(fmt.Sprintf("CUSTOMER#%08d", n/10)),
		"SK":       s(fmt.Sprintf("ORDER#%08d", n)),
		"GSI1PK":   s(fmt.Sprintf("STATUS#%d", n%7)),
		"name":     s("Jane Q. Example-Customer"),
		"email":    s(fmt.Sprintf("customer%d@example.com", n)),
		"total":    &types.AttributeValueMemberN{Value: "1234.56"},
		"quantity": &types.AttributeValueMemberN{Value: fmt.Sprint(n % 100)},
		"created":  s("2024-03-17T12:34:56.789Z"),
		"active":   &types.AttributeValueMemberBOOL{Value: n%2 == 0},
		"tags":     &types.AttributeValueMemberSS{Value: []string{"priority", "gift", "überweisung"}},
		"address": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"street": s("1234 Long Street Name Apt 56"),
			"city":   s("Springfield"),
			"zip":    s("12345-6789"),
		}},
		"notes":    s(strings.Repeat("Leave at the back door, ring twice. ", 6)),
		"discount": &types.AttributeValueMemberNULL{Value: true},
	}
}

// avJSON renders an AttributeValue in DynamoDB JSON, as the SDK does.
func avJSON(v types.AttributeValue) any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": v.Value}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *types.AttributeValueMemberM:
		m := map[string]any{}
		for k, e := range v.Value {
			m[k] = avJSON(e)
		}
		return map[string]any{"M": m}
	}
	panic(fmt.Sprintf("unsupported %T", v))
}

// benchBodies returns n distinct 25-item BatchWriteItem request bodies.
func benchBodies(n int) [][]byte {
	bodies := make([][]byte, n)
	for i := range bodies {
		reqs := make([]any, 25)
		for j := range reqs {
			item := map[string]any{}
			for k, v := range benchItem(i*25 + j) {
				item[k] = avJSON(v)
			}
			reqs[j] = map[string]any{"PutRequest": map[string]any{"Item": item}}
		}
		bodies[i], _ = json.Marshal(map[string]any{
			"RequestItems":           map[string]any{"items": reqs},
			"ReturnConsumedCapacity": "TOTAL",
		})
	}
	return bodies
}

func reportItems(b *testing.B, batches int64) {
	b.StopTimer() // keep the deferred shutdowns out of the measurement
	b.ReportMetric(float64(batches*25)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkBatchWrite posts pre-encoded 25-item requests over loopback HTTP
// from parallel clients: the server's throughput including net/http.
func BenchmarkBatchWrite(b *testing.B) {
	url, stop, err := Start(Options{Tables: []TableSpec{testTable}})
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	bodies := benchBodies(64)
	b.SetBytes(int64(len(bodies[0])))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}}
	var next, done atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := bodies[next.Add(1)%int64(len(bodies))]
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("X-Amz-Target", "DynamoDB_20120810.BatchWriteItem")
			req.Header.Set("Content-Type", "application/x-amz-json-1.0")
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
			done.Add(1)
		}
	})
	reportItems(b, done.Load())
	client.CloseIdleConnections()
}

// discardWriter is a minimal http.ResponseWriter.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkBatchWriteHandler calls ServeHTTP directly: the cost of parsing,
// validating and answering a batch, without the network. The capacity case
// enables both token buckets with limits too high to throttle, to price the
// bucket bookkeeping (one partition bucket per customer key).
func BenchmarkBatchWriteHandler(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"unlimited", Options{}},
		{"capacity", Options{WCU: 1e12, PartitionWCU: 1e12}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.opts.Tables = []TableSpec{testTable}
			srv := New(bc.opts)
			bodies := benchBodies(64)
			b.SetBytes(int64(len(bodies[0])))
			b.ReportAllocs()
			var next atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := &discardWriter{h: http.Header{}}
				req, _ := http.NewRequest(http.MethodPost, "/", nil)
				req.Header.Set("X-Amz-Target", "DynamoDB_20120810.BatchWriteItem")
				var rd bytes.Reader
				for pb.Next() {
					body := bodies[next.Add(1)%int64(len(bodies))]
					rd.Reset(body)
					req.Body = io.NopCloser(&rd)
					req.ContentLength = int64(len(body))
					srv.ServeHTTP(w, req)
				}
			})
			reportItems(b, int64(b.N))
			if st := srv.Stats(); st.Items != int64(b.N)*25 {
				b.Fatalf("admitted %d items, want %d", st.Items, b.N*25)
			}
		})
	}
}

// BenchmarkBatchWriteSDK drives the server through aws-sdk-go-v2, as dynafold
// does. The client's own cost (serialising, signing) dominates, so this is
// closer to what dynafold can reach against a free backend.
func BenchmarkBatchWriteSDK(b *testing.B) {
	url, stop, err := Start(Options{Tables: []TableSpec{testTable}})
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	batches := make([][]types.WriteRequest, 64)
	for i := range batches {
		for j := range 25 {
			batches[i] = append(batches[i], puts(benchItem(i*25+j))...)
		}
	}
	c := newClient(url)
	var next atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			reqs := batches[next.Add(1)%int64(len(batches))]
			if _, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{"items": reqs},
			}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportItems(b, int64(b.N))
}
