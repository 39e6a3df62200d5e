package mapping

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/dynafold/dynafold/value"
)

// Transform is one "|name" or "|name:arg" step of a template expression.
type Transform struct {
	Name string
	Arg  int
}

func (t Transform) String() string {
	if t.Name == "pad" || t.Name == "shard" {
		return fmt.Sprintf("%s:%d", t.Name, t.Arg)
	}
	return t.Name
}

// transformInfo says what each transform accepts; Compile uses it to reject
// a transform that cannot apply to a column's kind before reading a row.
var transformInfo = map[string]struct {
	needsArg bool
	maxArg   int
	accepts  []value.Kind // empty: any kind
	doc      string
}{
	"lower": {doc: "lower-case text"},
	"upper": {doc: "upper-case text"},
	"pad":   {needsArg: true, maxArg: 64, accepts: []value.Kind{value.Int, value.Decimal, value.String}, doc: "zero-pad a non-negative integer to N digits so it sorts as text"},
	"iso":   {accepts: []value.Kind{value.Timestamp, value.Date}, doc: "fixed-width UTC timestamp 2006-01-02T15:04:05.000Z"},
	"epoch": {accepts: []value.Kind{value.Timestamp, value.Date}, doc: "seconds since 1970-01-01 UTC"},
	"date":  {accepts: []value.Kind{value.Timestamp, value.Date}, doc: "UTC calendar date 2006-01-02"},
	"shard": {needsArg: true, maxArg: 1 << 20, doc: "deterministic bucket 0..N-1 (FNV-1a of the value's text, mod N)"},
}

func parseTransform(s string) (Transform, error) {
	name, arg, hasArg := strings.Cut(s, ":")
	info, ok := transformInfo[name]
	if !ok {
		return Transform{}, fmt.Errorf("unknown transform %q (known: date, epoch, iso, lower, pad:N, shard:N, upper)", name)
	}
	t := Transform{Name: name}
	switch {
	case info.needsArg && !hasArg:
		return t, fmt.Errorf("transform %q needs a number, e.g. %s:8", name, name)
	case !info.needsArg && hasArg:
		return t, fmt.Errorf("transform %q takes no argument", name)
	case hasArg:
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || n > info.maxArg {
			return t, fmt.Errorf("transform %s needs a whole number from 1 to %d, not %q", name, info.maxArg, arg)
		}
		t.Arg = n
	}
	return t, nil
}

// check reports whether the transform can apply to a value of kind k.
func (t Transform) check(k value.Kind) error {
	info := transformInfo[t.Name]
	if len(info.accepts) == 0 {
		return nil
	}
	for _, a := range info.accepts {
		if a == k {
			return nil
		}
	}
	names := make([]string, len(info.accepts))
	for i, a := range info.accepts {
		names[i] = a.String()
	}
	return fmt.Errorf("transform %s applies to %s values, not %s", t, strings.Join(names, " or "), k)
}

// resultKind is the kind a transform produces.
func (t Transform) resultKind() value.Kind {
	if t.Name == "epoch" || t.Name == "shard" {
		return value.Int
	}
	return value.String
}

var errNegativePad = errors.New("cannot pad a negative number")

func (t Transform) apply(v value.Value) (value.Value, error) {
	switch t.Name {
	case "lower":
		return value.StringValue(strings.ToLower(v.Text())), nil
	case "upper":
		return value.StringValue(strings.ToUpper(v.Text())), nil
	case "pad":
		return pad(v, t.Arg)
	case "iso":
		if v.Kind != value.Timestamp && v.Kind != value.Date {
			return v, fmt.Errorf("not a date or timestamp: %s", v.Kind)
		}
		return value.StringValue(v.Time().UTC().Format(value.TimestampLayout)), nil
	case "epoch":
		if v.Kind != value.Timestamp && v.Kind != value.Date {
			return v, fmt.Errorf("not a date or timestamp: %s", v.Kind)
		}
		return value.IntValue(v.Time().Unix()), nil
	case "date":
		if v.Kind != value.Timestamp && v.Kind != value.Date {
			return v, fmt.Errorf("not a date or timestamp: %s", v.Kind)
		}
		return value.StringValue(v.Time().UTC().Format(value.DateLayout)), nil
	case "shard":
		return value.IntValue(int64(ShardOf(v.Text(), t.Arg))), nil
	}
	return v, fmt.Errorf("unknown transform %q", t.Name)
}

// ShardOf is the write-shard bucket of a value's text: FNV-1a (64-bit) mod n.
// It is part of the on-disk contract—changing it would move every sharded
// key—so it is fixed here and tested against known values.
func ShardOf(text string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(text))
	return int(h.Sum64() % uint64(n))
}

func pad(v value.Value, width int) (value.Value, error) {
	var digits string
	switch v.Kind {
	case value.Int:
		if v.I < 0 {
			return v, errNegativePad
		}
		digits = strconv.FormatInt(v.I, 10)
	case value.Decimal, value.String:
		s := strings.TrimSpace(v.S)
		if strings.HasPrefix(s, "-") {
			return v, errNegativePad
		}
		s = strings.TrimPrefix(s, "+")
		if i := strings.IndexByte(s, '.'); i >= 0 && strings.Trim(s[i+1:], "0") == "" {
			s = s[:i]
		}
		if s == "" || strings.Trim(s, "0123456789") != "" {
			return v, fmt.Errorf("%s is not a whole number", quoteValue(v.S))
		}
		digits = strings.TrimLeft(s, "0")
		if digits == "" {
			digits = "0"
		}
	default:
		return v, fmt.Errorf("cannot pad a %s value", v.Kind)
	}
	if len(digits) > width {
		return v, fmt.Errorf("%s has more than %d digits, so padded keys would no longer sort", boundValue(digits), width)
	}
	return value.StringValue(strings.Repeat("0", width-len(digits)) + digits), nil
}
