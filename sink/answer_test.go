package sink

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/require"
)

// sdkParse is what the SDK's deserializer makes of a 200 answer.
func sdkParse(t *testing.T, s *DirectSender, body string) (*dynamodb.BatchWriteItemOutput, error) {
	t.Helper()
	resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
	out := &dynamodb.BatchWriteItemOutput{}
	err := s.opts.Protocol.DeserializeResponse(context.Background(), s.op, dynamodb.TypeRegistry, &smithyhttp.Response{Response: resp}, out)
	return out, err
}

// TestParseSuccessAgreesWithTheSDK: every answer parseSuccess accepts, the
// SDK reads to the same output; the usual answers are accepted; the rest
// are left to the SDK.
func TestParseSuccessAgreesWithTheSDK(t *testing.T) {
	s := NewDirectSender(localClient("http://127.0.0.1:1"))
	agree := func(body string) bool {
		t.Helper()
		got, ok := parseSuccess([]byte(body))
		if !ok {
			return false
		}
		want, err := sdkParse(t, s, body)
		require.NoError(t, err, body)
		require.Equal(t, want.UnprocessedItems, got.UnprocessedItems, body)
		require.Equal(t, want.ConsumedCapacity, got.ConsumedCapacity, body)
		require.Equal(t, want.ItemCollectionMetrics, got.ItemCollectionMetrics, body)
		return true
	}
	accepted := []string{
		`{"UnprocessedItems":{}}`,
		`{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":25.0}],"UnprocessedItems":{}}`,
		`{"UnprocessedItems":{},"ConsumedCapacity":[{"CapacityUnits":25,"TableName":"bench-1.x_y"}]}`,
		`{"ConsumedCapacity":[{"TableName":"a","CapacityUnits":1},{"TableName":"b","CapacityUnits":2.5e1}],"UnprocessedItems":{}}`,
		`{"ConsumedCapacity":[],"UnprocessedItems":{}}`,
		`{"ConsumedCapacity":[{}],"UnprocessedItems":{}}`,
		`{}`,
		" {\n \"UnprocessedItems\" : { } ,\t\"ConsumedCapacity\" : [ { \"TableName\" : \"t\" , \"CapacityUnits\" : -0 } ] }\r\n",
		`{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":1E+2}],"UnprocessedItems":{}}`,
		`{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":0.5e-3}],"UnprocessedItems":{}}`,
	}
	for _, body := range accepted {
		require.True(t, agree(body), "not accepted: %s", body)
	}
	leftToSDK := []string{
		`{"UnprocessedItems":{"t":[{"PutRequest":{"Item":{"PK":{"S":"a"}}}}]}}`,
		`{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":25,"Table":{"CapacityUnits":25}}],"UnprocessedItems":{}}`,
		`{"UnprocessedItems":{},"ItemCollectionMetrics":{}}`,
		`{"ConsumedCapacity":[{"TableName":"t\u0031","CapacityUnits":1}],"UnprocessedItems":{}}`,
		`{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":"NaN"}],"UnprocessedItems":{}}`,
		`{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":01}],"UnprocessedItems":{}}`,
		`{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":+1}],"UnprocessedItems":{}}`,
		`{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":1e400}],"UnprocessedItems":{}}`,
		`{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":1.}],"UnprocessedItems":{}}`,
		`{"ConsumedCapacity":null,"UnprocessedItems":{}}`,
		`{"UnprocessedItems":null}`,
		`{"UnprocessedItems":{},"UnprocessedItems":{}}`,
		`{"ConsumedCapacity":[{"TableName":"t","TableName":"u"}]}`,
		`{"UnprocessedItems":{}} x`,
		`{"UnprocessedItems":{}`,
		`{"UnprocessedItems":{},}`,
		`[]`,
		``,
		`{"ConsumedCapacity":[{"TableName":"tä","CapacityUnits":1}]}`,
	}
	for _, body := range leftToSDK {
		require.False(t, agree(body), "accepted: %s", body)
	}
	// Random spacing, key orders and number forms.
	rng := rand.New(rand.NewSource(1))
	sp := func() string { return []string{"", " ", "\n", "\t ", "\r\n  "}[rng.Intn(5)] }
	num := func() string {
		return []string{"0", "25", "25.0", "2.5e1", "250E-1", "1e+0", "-3", "12345678901234567890", "0.1", "1.7976931348623157e308"}[rng.Intn(10)]
	}
	for i := range 2000 {
		var ccs []string
		for range rng.Intn(3) {
			fields := []string{
				fmt.Sprintf(`%s"TableName"%s:%s"t%d"%s`, sp(), sp(), sp(), rng.Intn(100), sp()),
				fmt.Sprintf(`%s"CapacityUnits"%s:%s%s%s`, sp(), sp(), sp(), num(), sp()),
			}
			rng.Shuffle(len(fields), func(a, b int) { fields[a], fields[b] = fields[b], fields[a] })
			ccs = append(ccs, "{"+strings.Join(fields[:1+rng.Intn(2)], ",")+"}")
		}
		top := []string{
			fmt.Sprintf(`%s"UnprocessedItems"%s:%s{%s}%s`, sp(), sp(), sp(), sp(), sp()),
			fmt.Sprintf(`%s"ConsumedCapacity"%s:%s[%s]%s`, sp(), sp(), sp(), strings.Join(ccs, ","), sp()),
		}
		rng.Shuffle(len(top), func(a, b int) { top[a], top[b] = top[b], top[a] })
		body := sp() + "{" + strings.Join(top[:1+rng.Intn(2)], ",") + "}" + sp()
		require.True(t, agree(body), "case %d not accepted: %s", i, body)
	}
}

func BenchmarkParseSuccess(b *testing.B) {
	body := []byte(`{"ConsumedCapacity":[{"TableName":"bench1","CapacityUnits":25.0}],"UnprocessedItems":{}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := parseSuccess(body); !ok {
			b.Fatal("refused")
		}
	}
}

func BenchmarkParseSuccessSDK(b *testing.B) {
	s := NewDirectSender(localClient("http://127.0.0.1:1"))
	body := `{"ConsumedCapacity":[{"TableName":"bench1","CapacityUnits":25.0}],"UnprocessedItems":{}}`
	b.ReportAllocs()
	for b.Loop() {
		resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
		out := &dynamodb.BatchWriteItemOutput{}
		if err := s.opts.Protocol.DeserializeResponse(context.Background(), s.op, dynamodb.TypeRegistry, &smithyhttp.Response{Response: resp}, out); err != nil {
			b.Fatal(err)
		}
	}
}
