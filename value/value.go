// Package value defines the normalized values that flow from a source reader
// to the item builder and into checkpoints.
//
// Each database driver returns its own Go types (pgtype.Numeric, []byte for
// a MySQL DECIMAL, time.Time in some location…). Readers convert them once,
// at the edge, into a Value of a small fixed set of kinds, so that type
// conversion to DynamoDB is written once and behaves the same for PostgreSQL
// and MySQL. Numbers that must stay exact (numeric, decimal, unsigned bigint)
// travel as decimal text and never pass through float64.
package value

import (
	"fmt"
	"math"
	"strconv"
	"time"
	"unsafe"
)

// Kind says which field of a Value holds the data.
type Kind uint8

// The kinds of source value.
const (
	Null      Kind = iota // SQL NULL
	Int                   // I: any integer column that fits int64
	Decimal               // S: exact decimal text, e.g. "-12.3400" or "18446744073709551615"
	Float                 // F: float4/float8, FLOAT/DOUBLE
	Bool                  // I: 0 or 1
	String                // S: text, varchar, char, enum, uuid, …
	Bytes                 // B: bytea, blob, binary
	Date                  // T: a calendar date at 00:00 UTC
	Timestamp             // T: an instant, in UTC
	JSON                  // S: JSON text as stored (json, jsonb, MySQL JSON)
	List                  // L: a PostgreSQL array
)

var kindNames = [...]string{"null", "int", "decimal", "float", "bool", "string", "bytes", "date", "timestamp", "json", "list"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Value is one normalized column value. It is a plain struct rather than an
// interface so that rows can be built without boxing every column, and it
// is kept to 40 bytes: sync holds the key values of every row a round
// touches and reads rows by the hundred thousand, so each byte of a Value
// is paid in allocation and in the collector's marking. The kinds share
// the fields: a float keeps its bits in I, bytes are held as a string, an
// instant is its Unix seconds in I and its nanoseconds in nsec, and a
// list, rare, sits behind a pointer. The accessors (Float, Bytes, Time,
// List) read them back.
type Value struct {
	Kind Kind
	nsec int32 // Date, Timestamp: nanoseconds within the second
	I    int64 // Int, Bool (0 or 1); Float: its IEEE 754 bits; Date, Timestamp: Unix seconds
	S    string
	l    *[]Value
}

// Constructors keep call sites short and make the kind explicit.

func NullValue() Value            { return Value{} }
func IntValue(i int64) Value      { return Value{Kind: Int, I: i} }
func DecimalValue(s string) Value { return Value{Kind: Decimal, S: s} }
func FloatValue(f float64) Value  { return Value{Kind: Float, I: int64(math.Float64bits(f))} }
func StringValue(s string) Value  { return Value{Kind: String, S: s} }
func JSONValue(s string) Value    { return Value{Kind: JSON, S: s} }

// BytesValue returns a Bytes value holding a copy of b, so that a driver
// may reuse its buffer.
func BytesValue(b []byte) Value { return Value{Kind: Bytes, S: string(b)} }

// ListValue returns a List value of l (nil or empty: an empty list).
func ListValue(l []Value) Value { return Value{Kind: List, l: &l} }

// TimestampValue returns a Timestamp value of the instant t.
func TimestampValue(t time.Time) Value { return instant(Timestamp, t) }

func instant(k Kind, t time.Time) Value {
	return Value{Kind: k, I: t.Unix(), nsec: int32(t.Nanosecond())}
}

// Float is a Float value's number.
func (v Value) Float() float64 { return math.Float64frombits(uint64(v.I)) }

// Bytes is a Bytes value's bytes. They share the value's memory: the
// caller reads them and never writes to them. Empty bytes are an empty
// slice, never nil: a nil B attribute is written {"B":null}, which
// DynamoDB refuses.
func (v Value) Bytes() []byte {
	if v.S == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(v.S), len(v.S))
}

// Time is a Date or Timestamp value's instant, in UTC (a Date's is its
// day at 00:00).
func (v Value) Time() time.Time { return time.Unix(v.I, int64(v.nsec)).UTC() }

// List is a List value's elements.
func (v Value) List() []Value {
	if v.l == nil {
		return nil
	}
	return *v.l
}

// BoolValue returns a Bool value.
func BoolValue(b bool) Value {
	if b {
		return Value{Kind: Bool, I: 1}
	}
	return Value{Kind: Bool}
}

// DateValue returns a Date value for the calendar day of t as seen in t's
// own location (a DATE column has no zone; drivers hand it over as midnight).
func DateValue(t time.Time) Value {
	y, m, d := t.Date()
	return instant(Date, time.Date(y, m, d, 0, 0, 0, 0, time.UTC))
}

// IsNull reports whether v is SQL NULL.
func (v Value) IsNull() bool { return v.Kind == Null }

// Row is one source row: values in the order of the query's column list.
type Row []Value

// Text renders v the way it appears in error messages, reject files and
// template substitution of non-string kinds. It is exact for numbers.
func (v Value) Text() string {
	switch v.Kind {
	case Null:
		return ""
	case Int:
		return strconv.FormatInt(v.I, 10)
	case Decimal, String, JSON:
		return v.S
	case Float:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case Bool:
		if v.I != 0 {
			return "true"
		}
		return "false"
	case Bytes:
		return fmt.Sprintf("%x", v.S)
	case Date:
		return v.Time().Format(DateLayout)
	case Timestamp:
		return v.Time().Format(TimestampLayout)
	case List:
		s := "["
		for i, e := range v.List() {
			if i > 0 {
				s += ","
			}
			s += e.Text()
		}
		return s + "]"
	}
	return ""
}

// Layouts used for dates and instants everywhere: fixed width, so that the
// strings sort in time order inside DynamoDB sort keys.
const (
	DateLayout      = "2006-01-02"
	TimestampLayout = "2006-01-02T15:04:05.000Z"
)

// Equal reports whether a and b are the same value of the same kind.
func Equal(a, b Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case Null:
		return true
	case Int, Bool:
		return a.I == b.I
	case Float:
		return a.Float() == b.Float()
	case Decimal, String, JSON:
		return a.S == b.S
	case Bytes:
		return a.S == b.S
	case Date, Timestamp:
		return a.I == b.I && a.nsec == b.nsec
	case List:
		al, bl := a.List(), b.List()
		if len(al) != len(bl) {
			return false
		}
		for i := range al {
			if !Equal(al[i], bl[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// AppendText appends v.Text() to dst without allocating for the common
// kinds.
func AppendText(dst []byte, v Value) []byte {
	switch v.Kind {
	case Int:
		return strconv.AppendInt(dst, v.I, 10)
	case Decimal, String, JSON:
		return append(dst, v.S...)
	case Date:
		return v.Time().AppendFormat(dst, DateLayout)
	case Timestamp:
		return v.Time().AppendFormat(dst, TimestampLayout)
	}
	return append(dst, v.Text()...)
}

// RowSlab hands out rows carved from larger blocks, so that a reader
// makes one allocation per rowsPerSlab rows instead of one per row. A
// block stays alive while any row of it does.
type RowSlab struct{ free []Value }

// rowsPerSlab: rows are a few hundred bytes; 64 of them are a small block.
const rowsPerSlab = 64

// Row returns a zeroed row of n values.
func (s *RowSlab) Row(n int) Row {
	if n > len(s.free) {
		s.free = make([]Value, n*rowsPerSlab)
	}
	r := s.free[:n:n]
	s.free = s.free[n:]
	return r
}
