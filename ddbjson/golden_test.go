package ddbjson_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/ddbjson"
	"github.com/dynafold/dynafold/internal/sdkcapture"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func b(v []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: v} }
func l(v ...types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberL{Value: v}
}
func m(v map[string]types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: v}
}

func allBytes() []byte {
	out := make([]byte, 256)
	for i := range out {
		out[i] = byte(i)
	}
	return out
}

// goldenItems cover every attribute type and the limit cases of the
// encoding: escapes, unicode, invalid UTF-8, large numbers, binary, empty
// values and a 400 KB item.
func goldenItems() map[string]map[string]types.AttributeValue {
	big := strings.Repeat("a\"\\é\u2028😀\x01", 400*1024/16)
	return map[string]map[string]types.AttributeValue{
		"S":               {"pk": s("plain"), "empty": s("")},
		"S escapes":       {"pk": s("quote\" back\\ slash/ nl\n cr\r tab\t bs\b ff\f nul\x00 us\x1f del\x7f <>&'")},
		"S unicode":       {"pk": s("héllo ✓ 😀 \u2028 \u2029 \u00a0 \ufeff 中文")},
		"S invalid UTF-8": {"pk": s("a\xffb\xc3")},
		"N": {"pk": n("0"), "neg": n("-1.5"), "exp": n("1E-130"), "big": n("99999999999999999999999999999999999999"),
			"bigexp": n("9.9999999999999999999999999999999999999E+125"), "negexp": n("-1e-130")},
		"B":    {"pk": b([]byte("key")), "all": b(allBytes()), "empty": b([]byte{}), "one": b([]byte{0xff}), "two": b([]byte{0xfb, 0xff})},
		"BOOL": {"pk": s("k"), "t": &types.AttributeValueMemberBOOL{Value: true}, "f": &types.AttributeValueMemberBOOL{Value: false}},
		"NULL": {"pk": s("k"), "null": &types.AttributeValueMemberNULL{Value: true}},
		"L":    {"pk": s("k"), "empty": l(), "mixed": l(s("a"), n("1"), b([]byte{1}), l(l()), m(map[string]types.AttributeValue{"x": s("y")}), &types.AttributeValueMemberNULL{Value: true})},
		"M": {"pk": s("k"), "empty": m(map[string]types.AttributeValue{}), "nested": m(map[string]types.AttributeValue{
			"a":     m(map[string]types.AttributeValue{"b": l(s("c"), &types.AttributeValueMemberSS{Value: []string{"d"}})}),
			"é\"\n": n("2"),
		})},
		"SS": {"pk": s("k"), "ss": &types.AttributeValueMemberSS{Value: []string{"a", "é", "\"", "\u2028"}}},
		"NS": {"pk": s("k"), "ns": &types.AttributeValueMemberNS{Value: []string{"1", "-2.5", "1E+125"}}},
		"BS": {"pk": s("k"), "bs": &types.AttributeValueMemberBS{Value: [][]byte{{0}, {1, 2}, allBytes()}}},
		"nil members": {"pk": s("k"), "l": &types.AttributeValueMemberL{}, "m": &types.AttributeValueMemberM{}, "ss": &types.AttributeValueMemberSS{},
			"ns": &types.AttributeValueMemberNS{}, "bs": &types.AttributeValueMemberBS{}, "b": &types.AttributeValueMemberB{}, "bsnil": &types.AttributeValueMemberBS{Value: [][]byte{nil}}},
		"names":  {"pk": s("k"), "é \"quoted\" \\ \u2028": s("v"), "": s("empty name")},
		"400 KB": {"pk": s("k"), "big": s(big), "bin": b(bytes.Repeat(allBytes(), 100*1024/256))},
	}
}

// TestAppendItemMatchesSDK: for every case, an item encoded by AppendItem
// is the bytes the SDK's serializer writes for it in a PutItem request, up
// to key order.
func TestAppendItemMatchesSDK(t *testing.T) {
	rec := &sdkcapture.Recorder{}
	c := sdkcapture.NewClient(rec)
	for name, item := range goldenItems() {
		t.Run(name, func(t *testing.T) {
			_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("t"), Item: item})
			require.NoError(t, err)
			want, err := ddbjson.Canonical(rec.Body())
			require.NoError(t, err)
			ours := append([]byte(`{"Item":`), ddbjson.AppendItem(nil, item)...)
			ours = append(ours, `,"TableName":"t"}`...)
			got, err := ddbjson.Canonical(ours)
			require.NoError(t, err)
			if !bytes.Equal(want, got) {
				t.Fatalf("encodings differ\nSDK:  %.400s\nours: %.400s", want, got)
			}
		})
	}
}

// TestCanonicalOrder: Canonical sees key order only, never the spelling of
// a value.
func TestCanonicalOrder(t *testing.T) {
	x, err := ddbjson.Canonical([]byte(`{"b":{"S":"\u00e9"},"a":[{"y":1,"x":2}]}`))
	require.NoError(t, err)
	require.Equal(t, `{"a":[{"x":2,"y":1}],"b":{"S":"\u00e9"}}`, string(x))
	y, err := ddbjson.Canonical([]byte(`{"b":{"S":"é"},"a":[{"x":2,"y":1}]}`))
	require.NoError(t, err)
	require.NotEqual(t, string(x), string(y))
}

// TestDecodeReadsWhatAppendItemWrites: every golden item, encoded and
// decoded, encodes again to the same bytes (up to key order), and a plain
// item decodes to equal values.
func TestDecodeReadsWhatAppendItemWrites(t *testing.T) {
	for name, item := range goldenItems() {
		// {"B":null} (a nil binary, as the SDK writes it) is no valid
		// value for DynamoDB, and the SDK reads it back as a set.
		delete(item, "b")
		t.Run(name, func(t *testing.T) {
			enc := ddbjson.AppendItem(nil, item)
			dec, err := ddbjson.Decode(enc)
			require.NoError(t, err)
			require.Len(t, dec, len(item))
			want, err := ddbjson.Canonical(enc)
			require.NoError(t, err)
			got, err := ddbjson.Canonical(ddbjson.AppendItem(nil, dec))
			require.NoError(t, err)
			if !bytes.Equal(want, got) {
				t.Fatalf("round trip differs\nin:  %.400s\nout: %.400s", want, got)
			}
		})
	}
	dec, err := ddbjson.Decode([]byte(`{"PK":{"S":"a"},"n":{"N":"1.5"},"b":{"B":"AQI="}}`))
	require.NoError(t, err)
	require.Equal(t, map[string]types.AttributeValue{"PK": s("a"), "n": n("1.5"), "b": b([]byte{1, 2})}, dec)
	for _, bad := range []string{``, `[]`, `"x"`, `{"PK":`} {
		_, err := ddbjson.Decode([]byte(bad))
		require.Error(t, err, bad)
	}
}
