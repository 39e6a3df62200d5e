package mysql

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// rowImage turns one row of a binlog rows event into column values by
// name. Columns are matched by name when the server logs column names
// (binlog_row_metadata = FULL), otherwise by ordinal position, which is the
// order of source.Table.Columns (introspected ORDER BY ORDINAL_POSITION).
// Only the table's introspected columns are kept.
func rowImage(t *source.Table, tm *replication.TableMapEvent, row []any) (map[string]value.Value, error) {
	names := tm.ColumnNameString()
	out := make(map[string]value.Value, len(t.Columns))
	for i, v := range row {
		var col *source.Column
		switch {
		case len(names) == len(row):
			col = t.Column(names[i])
		case i < len(t.Columns):
			col = &t.Columns[i]
		}
		if col == nil {
			continue
		}
		b, err := binlogText(v, col)
		if err != nil {
			return nil, fmt.Errorf("decoding %s.%s from the binlog: %w", t.Ref, col.Name, err)
		}
		val, err := decode(b, col.Kind)
		if err != nil {
			return nil, fmt.Errorf("decoding %s.%s from the binlog: %w", t.Ref, col.Name, err)
		}
		out[col.Name] = val
	}
	return out, nil
}

// binlogText renders a value go-mysql decoded from a row image as the text
// the text protocol sends for the same column, so that one decoder (decode)
// serves both the initial load and the change stream, and a row reads the
// same from either. nil is SQL NULL.
func binlogText(v any, col *source.Column) ([]byte, error) {
	dbType := strings.ToLower(col.DBType)
	unsigned := strings.Contains(dbType, "unsigned")
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int8:
		if unsigned {
			return strconv.AppendUint(nil, uint64(uint8(x)), 10), nil
		}
		return strconv.AppendInt(nil, int64(x), 10), nil
	case int16:
		if unsigned {
			return strconv.AppendUint(nil, uint64(uint16(x)), 10), nil
		}
		return strconv.AppendInt(nil, int64(x), 10), nil
	case int32:
		if unsigned {
			if strings.HasPrefix(dbType, "mediumint") {
				return strconv.AppendUint(nil, uint64(uint32(x)&0xFFFFFF), 10), nil
			}
			return strconv.AppendUint(nil, uint64(uint32(x)), 10), nil
		}
		return strconv.AppendInt(nil, int64(x), 10), nil
	case int64:
		switch {
		case strings.HasPrefix(dbType, "enum("):
			return enumText(col.DBType, x), nil
		case strings.HasPrefix(dbType, "set("):
			return setText(col.DBType, x), nil
		case unsigned || strings.HasPrefix(dbType, "bit"):
			return strconv.AppendUint(nil, uint64(x), 10), nil
		}
		return strconv.AppendInt(nil, x, 10), nil
	case int:
		return strconv.AppendInt(nil, int64(x), 10), nil
	case float32:
		return strconv.AppendFloat(nil, float64(x), 'g', -1, 32), nil
	case float64:
		return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
	case string:
		return padBinary(dbType, append([]byte{}, x...)), nil
	case []byte:
		// Never nil: an empty string or blob is not NULL.
		return padBinary(dbType, append([]byte{}, x...)), nil
	case fmt.Stringer: // decimal.Decimal, should UseDecimal ever be set
		return []byte(x.String()), nil
	}
	return nil, fmt.Errorf("unexpected binlog value %T", v)
}

// padBinary restores BINARY(n)'s trailing zero bytes, which the text
// protocol sends and the binlog leaves out.
func padBinary(dbType string, b []byte) []byte {
	if !strings.HasPrefix(dbType, "binary(") {
		return b
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(dbType, "binary("), ")"))
	if err != nil || len(b) >= n {
		return b
	}
	return append(b, make([]byte, n-len(b))...)
}

// enumMember matches one quoted member of enum('a','b') or set('a','b').
var enumMember = regexp.MustCompile(`'((?:[^']|'')*)'`)

// members lists the members of an ENUM or SET column type, in order.
func members(colType string) []string {
	var out []string
	for _, m := range enumMember.FindAllStringSubmatch(colType, -1) {
		out = append(out, strings.ReplaceAll(m[1], "''", "'"))
	}
	return out
}

// enumText is the member an ENUM's 1-based index names ("" for index 0,
// the value of an invalid insert).
func enumText(colType string, i int64) []byte {
	m := members(colType)
	if i < 1 || int(i) > len(m) {
		return []byte{}
	}
	return []byte(m[i-1])
}

// setText is the comma-separated members a SET's bitmap holds.
func setText(colType string, bits int64) []byte {
	var out []string
	for i, m := range members(colType) {
		if bits&(1<<i) != 0 {
			out = append(out, m)
		}
	}
	return []byte(strings.Join(out, ","))
}
