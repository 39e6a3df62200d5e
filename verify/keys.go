package verify

import (
	"encoding/binary"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
)

// keySchema knows the table's key attributes and encodes item keys in the
// three forms the comparer needs:
//
//   - text, as mapping.Item.Key has it (partition key, NUL, sort key;
//     numbers canonical), to match BatchGetItem responses to requests;
//   - a sortable record (keyRecord), whose byte order groups keys by
//     partition key and orders the keys of one partition as DynamoDB orders
//     sort keys (S and B by bytes, N by value), so that a sorted stream of
//     expected keys can be merged with Query or sorted Scan results;
//   - a report Key.
type keySchema struct {
	pk mapping.KeyAttr
	sk *mapping.KeyAttr
}

func newKeySchema(t *mapping.TableSchema) keySchema {
	return keySchema{pk: t.PK, sk: t.SK}
}

// key returns the item's key attributes, for requests.
func (k keySchema) key(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := map[string]types.AttributeValue{k.pk.Name: item[k.pk.Name]}
	if k.sk != nil {
		out[k.sk.Name] = item[k.sk.Name]
	}
	return out
}

// text returns the item's key as mapping.Item.Key holds it; ok is false
// when a key attribute is missing or of no key type.
func (k keySchema) text(item map[string]types.AttributeValue) (string, bool) {
	sk := ""
	if k.sk != nil {
		sk = k.sk.Name
	}
	return mapping.ItemKey(item, k.pk.Name, sk)
}

// Bytes that frame a partition key inside a sortable record: a zero byte
// in the key is escaped as 0x00 0xFF, and the key ends with 0x00 0x01, so
// no encoded partition key is a prefix of another and the records of one
// partition key are contiguous once sorted.
const (
	escByte     = 0x00
	escZero     = 0xFF
	escTerminal = 0x01
)

// appendPK appends the framed partition key of av.
func appendPK(dst []byte, av types.AttributeValue) []byte {
	s, _ := mapping.KeyIdentity(av)
	for i := 0; i < len(s); i++ {
		if s[i] == escByte {
			dst = append(dst, escByte, escZero)
			continue
		}
		dst = append(dst, s[i])
	}
	return append(dst, escByte, escTerminal)
}

// appendSortKey appends a sort-key value in DynamoDB's order.
func appendSortKey(dst []byte, av types.AttributeValue) ([]byte, bool) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return append(dst, v.Value...), true
	case *types.AttributeValueMemberB:
		return append(dst, v.Value...), true
	case *types.AttributeValueMemberN:
		return numberSortKey(dst, v.Value), true
	}
	return dst, false
}

// splitRecord returns the framed partition key and the (framed) sort-key
// part of a record.
func splitRecord(rec []byte) (pk, sk []byte) {
	for i := 0; i+1 < len(rec); i++ {
		if rec[i] != escByte {
			continue
		}
		if rec[i+1] == escTerminal {
			return rec[:i+2], rec[i+2:]
		}
		i++ // an escaped zero
	}
	return rec, nil
}

// decodePK turns a framed partition key back into an attribute value of
// the table's partition-key type.
func (k keySchema) decodePK(framed []byte) types.AttributeValue {
	raw := make([]byte, 0, len(framed))
	for i := 0; i < len(framed); i++ {
		if framed[i] == escByte {
			if i+1 < len(framed) && framed[i+1] == escZero {
				raw = append(raw, 0)
				i++
				continue
			}
			break
		}
		raw = append(raw, framed[i])
	}
	switch k.pk.Type {
	case mapping.TypeN:
		return &types.AttributeValueMemberN{Value: string(raw)}
	case mapping.TypeB:
		return &types.AttributeValueMemberB{Value: raw}
	}
	return &types.AttributeValueMemberS{Value: string(raw)}
}

// numberSortKey appends an encoding of a number whose byte order is the
// numbers' order: a sign byte, then for positive numbers the decimal
// exponent and the significant digits (ended by 0x00 so that 1.2 sorts
// before 1.25), for negative numbers the same complemented. Text that is
// not a number sorts after every number.
func numberSortKey(dst []byte, s string) []byte {
	c, err := mapping.NormalizeNumber(s)
	if err != nil {
		return append(append(dst, 0x04), s...)
	}
	if c == "0" {
		return append(dst, 0x02)
	}
	neg := strings.HasPrefix(c, "-")
	c = strings.TrimPrefix(c, "-")
	intPart, frac, _ := strings.Cut(c, ".")
	var digits string
	var exp int // power of ten of the first significant digit
	if intPart != "0" {
		exp = len(intPart) - 1
		digits = strings.TrimRight(intPart+frac, "0")
	} else {
		z := len(frac) - len(strings.TrimLeft(frac, "0"))
		exp = -(z + 1)
		digits = frac[z:]
	}
	// DynamoDB exponents lie in -130..125: far inside 16 bits around 0x8000.
	if !neg {
		dst = append(dst, 0x03)
		dst = binary.BigEndian.AppendUint16(dst, uint16(0x8000+exp))
		dst = append(dst, digits...)
		return append(dst, 0x00)
	}
	dst = append(dst, 0x01)
	dst = binary.BigEndian.AppendUint16(dst, uint16(0x8000-exp))
	for i := 0; i < len(digits); i++ {
		dst = append(dst, 0xFF-digits[i])
	}
	return append(dst, 0xFF)
}

// Key is an item's primary key in a report, verify's and patterns' alike:
// the key values as text (numbers as written, binary in base64), the sort
// key left out where the table has none. The attribute names and types
// are the report's KeySchema.
type Key struct {
	PK string  `json:"pk"`
	SK *string `json:"sk,omitempty"`
}

// ReportKey returns the key of item, an item of table t, for a report.
func ReportKey(t *mapping.TableSchema, item map[string]types.AttributeValue) Key {
	return newKeySchema(t).reportKey(item)
}

// String is the key as text without its attribute names: "PK / SK", or
// "PK" alone.
func (a Key) String() string {
	if a.SK == nil || *a.SK == "" {
		return a.PK
	}
	return a.PK + " / " + *a.SK
}

// Equal reports whether a and b are the same key.
func (a Key) Equal(b Key) bool { return a.PK == b.PK && a.sk() == b.sk() }

// describe names the item's key for an error message: PK=… SK=….
func (k keySchema) describe(item map[string]types.AttributeValue) string {
	s := k.pk.Name + "=" + mapping.KeyText(item[k.pk.Name])
	if k.sk != nil {
		s += " " + k.sk.Name + "=" + mapping.KeyText(item[k.sk.Name])
	}
	return s
}

// reportKey returns the item's key for a report.
func (k keySchema) reportKey(item map[string]types.AttributeValue) Key {
	out := Key{PK: mapping.KeyText(item[k.pk.Name])}
	if k.sk != nil {
		s := mapping.KeyText(item[k.sk.Name])
		out.SK = &s
	}
	return out
}

// less orders report keys for stable example lists: by partition key,
// then sort key, as text.
func (a Key) less(b Key) bool {
	if a.PK != b.PK {
		return a.PK < b.PK
	}
	return a.sk() < b.sk()
}

func (a Key) sk() string {
	if a.SK == nil {
		return ""
	}
	return *a.SK
}
