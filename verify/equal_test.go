package verify

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

func m(kv ...any) *types.AttributeValueMemberM {
	out := map[string]types.AttributeValue{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(types.AttributeValue)
	}
	return &types.AttributeValueMemberM{Value: out}
}

func l(vs ...types.AttributeValue) *types.AttributeValueMemberL {
	return &types.AttributeValueMemberL{Value: vs}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b types.AttributeValue
		want bool
	}{
		{"same string", s("a"), s("a"), true},
		{"different string", s("a"), s("A"), false},
		{"string is not number", s("1"), n("1"), false},
		{"trailing zeros", n("1.50"), n("1.5"), true},
		{"exponent", n("1e2"), n("100"), true},
		{"leading zeros and plus", n("+007"), n("7"), true},
		{"negative zero", n("-0"), n("0"), true},
		{"38 digits", n("12345678901234567890123456789012345678"), n("12345678901234567890123456789012345678.0"), true},
		{"last digit of 38", n("12345678901234567890123456789012345678"), n("12345678901234567890123456789012345679"), false},
		{"different numbers", n("1.5"), n("1.05"), false},
		{"binary", &types.AttributeValueMemberB{Value: []byte{0, 1}}, &types.AttributeValueMemberB{Value: []byte{0, 1}}, true},
		{"binary differs", &types.AttributeValueMemberB{Value: []byte{0, 1}}, &types.AttributeValueMemberB{Value: []byte{1, 0}}, false},
		{"bool", &types.AttributeValueMemberBOOL{Value: true}, &types.AttributeValueMemberBOOL{Value: true}, true},
		{"bool differs", &types.AttributeValueMemberBOOL{Value: true}, &types.AttributeValueMemberBOOL{Value: false}, false},
		{"null", &types.AttributeValueMemberNULL{Value: true}, &types.AttributeValueMemberNULL{Value: true}, true},
		{"null is not false", &types.AttributeValueMemberNULL{Value: true}, &types.AttributeValueMemberBOOL{}, false},
		{"string set order", &types.AttributeValueMemberSS{Value: []string{"a", "b"}}, &types.AttributeValueMemberSS{Value: []string{"b", "a"}}, true},
		{"string set member", &types.AttributeValueMemberSS{Value: []string{"a", "b"}}, &types.AttributeValueMemberSS{Value: []string{"a", "c"}}, false},
		{"string set size", &types.AttributeValueMemberSS{Value: []string{"a"}}, &types.AttributeValueMemberSS{Value: []string{"a", "b"}}, false},
		{"number set by value", &types.AttributeValueMemberNS{Value: []string{"1.0", "20"}}, &types.AttributeValueMemberNS{Value: []string{"2e1", "1"}}, true},
		{"number set differs", &types.AttributeValueMemberNS{Value: []string{"1", "2"}}, &types.AttributeValueMemberNS{Value: []string{"1", "3"}}, false},
		{"binary set order", &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}}, &types.AttributeValueMemberBS{Value: [][]byte{{2}, {1}}}, true},
		{"set is not list", &types.AttributeValueMemberSS{Value: []string{"a"}}, l(s("a")), false},
		{"list in order", l(s("a"), n("1")), l(s("a"), n("1.0")), true},
		{"list order matters", l(s("a"), s("b")), l(s("b"), s("a")), false},
		{"list length", l(s("a")), l(s("a"), s("a")), false},
		{"map by key", m("a", n("1"), "b", s("x")), m("b", s("x"), "a", n("1.00")), true},
		{"map extra key", m("a", n("1")), m("a", n("1"), "b", s("x")), false},
		{"nested map", m("a", m("b", l(n("1"), m("c", s("d"))))), m("a", m("b", l(n("1.0"), m("c", s("d"))))), true},
		{"nested map differs deep down", m("a", m("b", l(n("1"), m("c", s("d"))))), m("a", m("b", l(n("1"), m("c", s("e"))))), false},
		{"nil", nil, s("a"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Equal(tt.a, tt.b))
			require.Equal(t, tt.want, Equal(tt.b, tt.a), "symmetric")
		})
	}
}

func TestDiff(t *testing.T) {
	have := map[string]types.AttributeValue{"PK": s("1"), "Name": s("old"), "Size": n("10"), "Extra": s("x"), "Tags": &types.AttributeValueMemberSS{Value: []string{"a", "b"}}}
	want := map[string]types.AttributeValue{"PK": s("1"), "Name": s("new"), "Size": n("10.0"), "New": n("1"), "Tags": &types.AttributeValueMemberSS{Value: []string{"b", "a"}}}
	require.Equal(t, []Change{
		{Attribute: "Extra", Op: OpRemove, Old: valueOf(s("x"))},
		{Attribute: "Name", Op: OpChange, Old: valueOf(s("old")), New: valueOf(s("new"))},
		{Attribute: "New", Op: OpAdd, New: valueOf(n("1"))},
	}, Diff(have, want))
	require.Empty(t, Diff(want, want))
	require.Len(t, Diff(nil, want), 5)
	for _, c := range Diff(have, nil) {
		require.Equal(t, OpRemove, c.Op)
	}
}

func TestValueJSONRoundTrip(t *testing.T) {
	v := m("s", s("x<y"), "n", n("-1.5"), "b", &types.AttributeValueMemberB{Value: []byte("hi")}, "t", &types.AttributeValueMemberBOOL{Value: true},
		"z", &types.AttributeValueMemberNULL{Value: true}, "ss", &types.AttributeValueMemberSS{Value: []string{"b", "a"}},
		"ns", &types.AttributeValueMemberNS{Value: []string{"10", "9", "-1"}}, "bs", &types.AttributeValueMemberBS{Value: [][]byte{{2}, {1}}},
		"l", l(n("1"), m("k", s("v"))))
	data, err := Value{AV: v}.MarshalJSON()
	require.NoError(t, err)
	require.JSONEq(t, `{"M":{"s":{"S":"x<y"},"n":{"N":"-1.5"},"b":{"B":"aGk="},"t":{"BOOL":true},"z":{"NULL":true},
		"ss":{"SS":["a","b"]},"ns":{"NS":["-1","9","10"]},"bs":{"BS":["AQ==","Ag=="]},"l":{"L":[{"N":"1"},{"M":{"k":{"S":"v"}}}]}}}`, string(data))
	var back Value
	require.NoError(t, back.UnmarshalJSON(data))
	require.True(t, Equal(v, back.AV))
	require.Equal(t, `{"b": b64"aGk=", "bs": <<b64"AQ==", b64"Ag==">>, "l": [1, {"k": "v"}], "n": -1.5, "ns": <<-1, 9, 10>>, "s": "x<y", "ss": <<"a", "b">>, "t": true, "z": null}`, back.Text())
}
