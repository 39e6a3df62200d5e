package value

import (
	"encoding/json"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fields are shared between kinds; each kind must read back what it
// was given, compare by it, and survive a checkpoint's JSON.
func TestValuesReadBackWhatTheyHold(t *testing.T) {
	instant := time.Date(2024, 2, 29, 23, 59, 58, 123456789, time.FixedZone("x", 5*3600))
	cases := []struct {
		name  string
		v     Value
		check func(t *testing.T, v Value)
	}{
		{"null", NullValue(), func(t *testing.T, v Value) { assert.True(t, v.IsNull()) }},
		{"int", IntValue(math.MinInt64), func(t *testing.T, v Value) { assert.Equal(t, int64(math.MinInt64), v.I) }},
		{"float", FloatValue(-1.5e-300), func(t *testing.T, v Value) { assert.Equal(t, -1.5e-300, v.Float()) }},
		{"negative zero", FloatValue(math.Copysign(0, -1)), func(t *testing.T, v Value) { assert.True(t, math.Signbit(v.Float())) }},
		{"bytes", BytesValue([]byte{0, 0xff, 'a'}), func(t *testing.T, v Value) { assert.Equal(t, []byte{0, 0xff, 'a'}, v.Bytes()) }},
		{"empty bytes", BytesValue(nil), func(t *testing.T, v Value) {
			// A nil B attribute is written {"B":null}, which DynamoDB refuses.
			assert.NotNil(t, v.Bytes())
			assert.Empty(t, v.Bytes())
		}},
		{"timestamp", TimestampValue(instant), func(t *testing.T, v Value) {
			assert.True(t, v.Time().Equal(instant))
			assert.Equal(t, time.UTC, v.Time().Location())
			assert.Equal(t, "2024-02-29T18:59:58.123Z", v.Text())
		}},
		{"timestamp before 1970", TimestampValue(time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)), func(t *testing.T, v Value) {
			assert.Equal(t, time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), v.Time())
		}},
		{"date", DateValue(instant), func(t *testing.T, v Value) {
			assert.Equal(t, time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), v.Time())
			assert.Equal(t, "2024-02-29", v.Text())
		}},
		{"date 9999", DateValue(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)), func(t *testing.T, v Value) {
			assert.Equal(t, "9999-12-31", v.Text())
		}},
		{"list", ListValue([]Value{IntValue(1), StringValue("a")}), func(t *testing.T, v Value) {
			assert.Equal(t, "[1,a]", v.Text())
			assert.Len(t, v.List(), 2)
		}},
		{"empty list", ListValue(nil), func(t *testing.T, v Value) { assert.Empty(t, v.List()) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, c.v)
			b, err := json.Marshal(c.v)
			require.NoError(t, err)
			var back Value
			require.NoError(t, json.Unmarshal(b, &back), "%s", b)
			assert.True(t, Equal(c.v, back), "%s read back as %+v", b, back)
			c.check(t, back)
		})
	}
}

func TestEqualTellsInstantsAndFloatsApart(t *testing.T) {
	a := time.Date(2020, 1, 1, 0, 0, 0, 1, time.UTC)
	assert.False(t, Equal(TimestampValue(a), TimestampValue(a.Add(1))))
	assert.True(t, Equal(TimestampValue(a), TimestampValue(a.In(time.FixedZone("y", -3600)))))
	assert.False(t, Equal(DateValue(a), TimestampValue(a)))
	assert.False(t, Equal(FloatValue(1), FloatValue(1.0000000001)))
	assert.False(t, Equal(BytesValue([]byte("a")), StringValue("a")))
	assert.False(t, Equal(ListValue([]Value{IntValue(1)}), ListValue([]Value{IntValue(2)})))
}

// Sync holds the key values of every row a round touches and reads rows
// by the hundred thousand: a Value that grows is paid in allocation and in
// the collector's marking (it was 112 bytes before the kinds shared their
// fields).
func TestValueStaysSmall(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Value{}), uintptr(40))
}
