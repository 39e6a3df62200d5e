package sink

import (
	"bytes"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// parseSuccess reads the answer to nearly every BatchWriteItem request: a
// 200 whose UnprocessedItems is empty and whose ConsumedCapacity holds
// only table names and capacity units, e.g.
//
//	{"ConsumedCapacity":[{"TableName":"t","CapacityUnits":25.0}],"UnprocessedItems":{}}
//
// The SDK's deserializer walks the operation's schema for it, which takes
// more time and allocations per answer than this parser (go test ./sink/
// -run XXX -bench ParseSuccess; figures in docs/performance.md). Anything
// else (unprocessed items, other fields, escapes in a string, a number
// strconv does not read, duplicate keys) answers false, and the SDK's
// deserializer reads the answer, so the SDK stays the parser of record:
// TestParseSuccessAgreesWithTheSDK holds the two to the
// same output on every body this accepts.
func parseSuccess(body []byte) (*dynamodb.BatchWriteItemOutput, bool) {
	p := answerParser{b: body}
	out := &dynamodb.BatchWriteItemOutput{}
	var seenCC, seenUI bool
	ok := p.object(func(key []byte) bool {
		switch {
		case string(key) == "UnprocessedItems" && !seenUI:
			seenUI = true
			out.UnprocessedItems = map[string][]types.WriteRequest{}
			return p.emptyObject()
		case string(key) == "ConsumedCapacity" && !seenCC:
			seenCC = true
			out.ConsumedCapacity = []types.ConsumedCapacity{}
			return p.array(func() bool {
				var cc types.ConsumedCapacity
				var seenT, seenU bool
				ok := p.object(func(key []byte) bool {
					switch {
					case string(key) == "TableName" && !seenT:
						seenT = true
						s, ok := p.plainString()
						cc.TableName = &s
						return ok
					case string(key) == "CapacityUnits" && !seenU:
						seenU = true
						f, ok := p.number()
						cc.CapacityUnits = &f
						return ok
					}
					return false
				})
				out.ConsumedCapacity = append(out.ConsumedCapacity, cc)
				return ok
			})
		}
		return false
	})
	if !ok || !p.end() {
		return nil, false
	}
	return out, true
}

// answerParser reads the little JSON parseSuccess accepts.
type answerParser struct {
	b []byte
	i int
}

func (p *answerParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// take skips space and then c.
func (p *answerParser) take(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *answerParser) end() bool {
	p.space()
	return p.i == len(p.b)
}

// object reads {"key": value, …}, each value by field.
func (p *answerParser) object(field func(key []byte) bool) bool {
	if !p.take('{') {
		return false
	}
	if p.take('}') {
		return true
	}
	for {
		key, ok := p.plainBytes()
		if !ok || !p.take(':') || !field(key) {
			return false
		}
		if p.take('}') {
			return true
		}
		if !p.take(',') {
			return false
		}
	}
}

func (p *answerParser) emptyObject() bool { return p.take('{') && p.take('}') }

// array reads [value, …], each value by elem.
func (p *answerParser) array(elem func() bool) bool {
	if !p.take('[') {
		return false
	}
	if p.take(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if p.take(']') {
			return true
		}
		if !p.take(',') {
			return false
		}
	}
}

// plainBytes reads a string of printable ASCII without escapes (table
// names are [a-zA-Z0-9_.-]).
func (p *answerParser) plainBytes() ([]byte, bool) {
	if !p.take('"') {
		return nil, false
	}
	n := bytes.IndexByte(p.b[p.i:], '"')
	if n < 0 {
		return nil, false
	}
	s := p.b[p.i : p.i+n]
	for _, c := range s {
		if c == '\\' || c < 0x20 || c >= 0x7f {
			return nil, false
		}
	}
	p.i += n + 1
	return s, true
}

func (p *answerParser) plainString() (string, bool) {
	s, ok := p.plainBytes()
	return string(s), ok
}

// number reads a JSON number; strconv and the SDK agree on its value.
func (p *answerParser) number() (float64, bool) {
	p.space()
	start := p.i
	p.skip('-')
	if !p.skip('0') && p.digits() == 0 {
		return 0, false
	}
	if p.skip('.') && p.digits() == 0 {
		return 0, false
	}
	if p.skip('e') || p.skip('E') {
		if !p.skip('+') {
			p.skip('-')
		}
		if p.digits() == 0 {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	return f, err == nil
}

// skip takes c if it is next, with no space before it.
func (p *answerParser) skip(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *answerParser) digits() int {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}
