package verify

import (
	"bytes"
	"math/big"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
)

// The sortable encoding of numbers orders them by value.
func TestNumberSortKeyOrdersByValue(t *testing.T) {
	nums := []string{"0", "-0.0", "1", "-1", "1.2", "1.25", "-1.2", "-1.25", "12", "9", "0.001", "-0.001", "1e125", "-1e125", "1e-130", "-1e-130",
		"99999999999999999999999999999999999999", "10", "100", "0.1", "0.09", "-0.09", "123.456", "-123.456"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		mant := strconv.FormatInt(r.Int64N(2_000_000)-1_000_000, 10)
		nums = append(nums, mant+"e"+strconv.Itoa(r.IntN(40)-20))
	}
	rat := func(s string) *big.Rat {
		x, ok := new(big.Rat).SetString(s)
		require.True(t, ok, s)
		return x
	}
	byValue := append([]string(nil), nums...)
	sort.SliceStable(byValue, func(i, j int) bool { return rat(byValue[i]).Cmp(rat(byValue[j])) < 0 })
	byKey := append([]string(nil), nums...)
	sort.SliceStable(byKey, func(i, j int) bool {
		return bytes.Compare(numberSortKey(nil, byKey[i]), numberSortKey(nil, byKey[j])) < 0
	})
	for i := range byValue {
		require.Zero(t, rat(byValue[i]).Cmp(rat(byKey[i])), "position %d: %s by value, %s by key", i, byValue[i], byKey[i])
	}
	require.Equal(t, numberSortKey(nil, "1.50"), numberSortKey(nil, "15e-1"), "equal numbers encode alike")
}

func TestRecordsFramePartitionKeys(t *testing.T) {
	ks := keySchema{pk: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}, sk: &mapping.KeyAttr{Name: "SK", Type: mapping.TypeS}}
	item := func(pk, sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"PK": s(pk), "SK": s(sk)}
	}
	var recs [][]byte
	for _, it := range []map[string]types.AttributeValue{
		item("a", "2"), item("a\x00b", "1"), item("a", "1"), item("a\x00", "0"), item("ab", "0"), item("a", "\x00"),
	} {
		rec, ok := ks.keyRecord(nil, it)
		require.True(t, ok)
		recs = append(recs, rec)
	}
	sort.Slice(recs, func(i, j int) bool { return bytes.Compare(recs[i], recs[j]) < 0 })
	var got [][2]string
	for _, rec := range recs {
		pk, sk := splitRecord(rec)
		got = append(got, [2]string{ks.decodePK(pk).(*types.AttributeValueMemberS).Value, string(sk)})
	}
	// Each partition key's records are together, in sort-key order; the
	// sort key is framed too.
	f := func(sk string) string { return string(appendFramed(nil, []byte(sk))) }
	require.Equal(t, [][2]string{{"a", f("\x00")}, {"a", f("1")}, {"a", f("2")}, {"a\x00", f("0")}, {"a\x00b", f("1")}, {"ab", f("0")}}, got)
}

func TestKeyTextMatchesMapping(t *testing.T) {
	ks := keySchema{pk: mapping.KeyAttr{Name: "PK", Type: mapping.TypeN}, sk: &mapping.KeyAttr{Name: "SK", Type: mapping.TypeS}}
	k, ok := ks.text(map[string]types.AttributeValue{"PK": n("1.50"), "SK": s("x")})
	require.True(t, ok)
	require.Equal(t, "1.5\x00x", k)
	_, ok = ks.text(map[string]types.AttributeValue{"PK": n("1")})
	require.False(t, ok)
}

// A report key is the same in verify's and patterns' reports: the sort key
// left out where the table has none, and "PK / SK" as plain text.
func TestReportKey(t *testing.T) {
	withSK := &mapping.TableSchema{PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}, SK: &mapping.KeyAttr{Name: "SK", Type: mapping.TypeN}}
	k := ReportKey(withSK, map[string]types.AttributeValue{"PK": s("a"), "SK": n("1.50"), "x": s("y")})
	require.Equal(t, "a", k.PK)
	require.NotNil(t, k.SK)
	require.Equal(t, "1.50", *k.SK, "numbers as written")
	require.Equal(t, "a / 1.50", k.String())

	pkOnly := &mapping.TableSchema{PK: mapping.KeyAttr{Name: "PK", Type: mapping.TypeS}}
	k2 := ReportKey(pkOnly, map[string]types.AttributeValue{"PK": s("a")})
	require.Nil(t, k2.SK)
	require.Equal(t, "a", k2.String())

	require.True(t, k.Equal(Key{PK: "a", SK: k.SK}))
	require.False(t, k.Equal(k2))
	require.True(t, k2.Equal(Key{PK: "a", SK: new(string)}), "an empty sort key is none")
}
