package postgres

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dynafold/dynafold/value"
)

// decode converts what pgx returns for one column into a value of the
// column's kind.
func decode(v any, kind, elem value.Kind) value.Value {
	switch x := v.(type) {
	case nil:
		return value.NullValue()
	case int64:
		return value.IntValue(x)
	case int32:
		return value.IntValue(int64(x))
	case int16:
		return value.IntValue(int64(x))
	case uint32:
		return value.IntValue(int64(x))
	case float64:
		return value.FloatValue(x)
	case float32:
		// A real has about 7 significant digits: keep its shortest 32-bit
		// form (-3.4e38, not -3.3999999521443642e38), as MySQL sends it.
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
		return value.FloatValue(f)
	case bool:
		return value.BoolValue(x)
	case string:
		if kind == value.JSON {
			return value.JSONValue(x)
		}
		return value.StringValue(x)
	case []byte:
		return value.BytesValue(x)
	case time.Time:
		if kind == value.Date {
			return value.DateValue(x)
		}
		return value.TimestampValue(x)
	case pgtype.Numeric:
		return value.DecimalValue(numericText(x))
	case [16]byte:
		return value.StringValue(uuidText(x))
	case pgtype.InfinityModifier:
		// ±infinity dates and timestamps have no DynamoDB form; as text
		// they fail loudly wherever a date is required.
		return value.StringValue(x.String())
	case []any:
		out := make([]value.Value, len(x))
		for i, e := range x {
			out[i] = decode(e, elem, value.Null)
		}
		return value.ListValue(out)
	}
	return value.StringValue(fmt.Sprint(v))
}

// numericText renders a numeric exactly: the integer digits scaled by the
// exponent, never through float64.
func numericText(n pgtype.Numeric) string {
	switch {
	case !n.Valid:
		return ""
	case n.NaN:
		return "NaN"
	case n.InfinityModifier == pgtype.Infinity:
		return "Infinity"
	case n.InfinityModifier == pgtype.NegativeInfinity:
		return "-Infinity"
	}
	digits := n.Int.String()
	if n.Exp >= 0 {
		if n.Int.Sign() == 0 {
			return "0"
		}
		return digits + strings.Repeat("0", int(n.Exp))
	}
	neg := strings.HasPrefix(digits, "-")
	digits = strings.TrimPrefix(digits, "-")
	scale := int(-n.Exp)
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	s := digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	if neg {
		s = "-" + s
	}
	return s
}

func uuidText(b [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// arg converts a key value into a pgx query argument.
func arg(v value.Value) any {
	switch v.Kind {
	case value.Null:
		return nil
	case value.Int:
		return v.I
	case value.Decimal:
		// Bound as text: PostgreSQL casts it to the key column's numeric
		// type exactly.
		return v.S
	case value.Float:
		return v.Float()
	case value.Bool:
		return v.I != 0
	case value.Bytes:
		return v.Bytes()
	case value.Date, value.Timestamp:
		return v.Time()
	}
	return v.S
}
