package ddbnoop

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAttrValueSize(t *testing.T) {
	cases := []struct {
		name string
		json string
		size int
	}{
		{"ascii string", `{"S":"hello"}`, 5},
		{"empty string", `{"S":""}`, 0},
		{"two-byte utf8", `{"S":"héllo"}`, 6},
		{"escaped two-byte", `{"S":"h\u00e9llo"}`, 6},
		{"escaped quote and newline", `{"S":"a\"b\n"}`, 4},
		{"escaped surrogate pair", `{"S":"\ud83d\ude00"}`, 4},
		{"raw four-byte", `{"S":"😀"}`, 4},
		{"lone surrogate", `{"S":"\ud83d"}`, 3},
		{"three-byte CJK", `{"S":"日本"}`, 6},
		{"number 5 digits", `{"N":"12345"}`, 4},
		{"number 1 digit", `{"N":"7"}`, 2},
		{"number trailing zeros", `{"N":"100"}`, 2},
		{"number leading zeros", `{"N":"0.000100"}`, 2},
		{"number exponent", `{"N":"-1.5e10"}`, 2},
		{"number zero", `{"N":"0"}`, 1},
		{"number 38 digits", `{"N":"12345678901234567890123456789012345678"}`, 20},
		{"binary padded", `{"B":"AQIDBAU="}`, 5},
		{"binary unpadded", `{"B":"AQID"}`, 3},
		{"binary escaped slash", `{"B":"\/\/\/\/"}`, 3},
		{"bool", `{"BOOL":true}`, 1},
		{"null", `{"NULL":true}`, 1},
		{"string set", `{"SS":["ab","c"]}`, 3},
		{"number set", `{"NS":["1","12345"]}`, 6},
		{"binary set", `{"BS":["AQID","AQ=="]}`, 4},
		{"list", `{"L":[{"N":"1"},{"NULL":true}]}`, 3 + (1 + 2) + (1 + 1)},
		{"empty list", `{"L":[]}`, 3},
		{"map", `{"M":{"a":{"S":"xy"},"b":{"BOOL":false}}}`, 3 + (1 + 1 + 2) + (1 + 1 + 1)},
		{"nested", `{"M":{"l":{"L":[{"M":{}}]}}}`, 3 + (1 + 1 + (3 + (1 + 3)))},
		{"whitespace", " { \"S\" : \"abc\" } ", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := scanner{b: []byte(c.json)}
			_, _, size, err := sc.attrValue(1)
			require.NoError(t, err)
			assert.Equal(t, c.size, size)
		})
	}
}

func TestAttrValueErrors(t *testing.T) {
	for _, js := range []string{
		`{"N":"abc"}`,
		`{"N":"1e"}`,
		`{"N":"123456789012345678901234567890123456789"}`, // 39 digits
		`{"X":"1"}`,
		`{}`,
		`{"S":"a","N":"1"}`,
		`{"S":"unterminated}`,
		`{"L":[{"S":"a"}`,
		`[]`,
	} {
		sc := scanner{b: []byte(js)}
		_, _, _, err := sc.attrValue(1)
		assert.Error(t, err, js)
	}
}

func TestAttrValueDepthLimit(t *testing.T) {
	js := `{"S":"x"}`
	for range maxAttrDepth + 2 {
		js = `{"L":[` + js + `]}`
	}
	sc := scanner{b: []byte(js)}
	_, _, _, err := sc.attrValue(1)
	var apiErr *apiError
	require.ErrorAs(t, err, &apiErr)
	assert.Contains(t, apiErr.Message, "Nesting")
}

func TestWriteUnits(t *testing.T) {
	for size, want := range map[int]int{0: 1, 1: 1, 1024: 1, 1025: 2, 2048: 2, 2049: 3, 400 * 1024: 400} {
		assert.Equal(t, want, writeUnits(size), "size %d", size)
	}
}

func TestSkipValue(t *testing.T) {
	sc := scanner{b: []byte(`{"a":[1,-2.5e3,true,null,"x\"y",{"b":{}}],"c":false} tail`)}
	require.NoError(t, sc.skipValue(0))
	assert.Equal(t, " tail", string(sc.b[sc.pos:]))
}
