package postgres

import (
	"encoding/binary"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// rowDecoder turns a result row's raw column bytes into values. The
// common column types are read straight from their wire form; rows.Values()
// would box each column into an interface (an allocation per string or
// number) that decode then unboxes, once per column of every row read.
// Every other type goes through pgx's codec for its OID, as Values() does,
// and then decode.
type rowDecoder struct {
	typeMap *pgtype.Map
	fields  []pgconn.FieldDescription
	cols    []source.ColumnRef
	fast    []rawKind
}

// rawKind is how one column's wire bytes are read.
type rawKind uint8

const (
	rawCodec  rawKind = iota // pgx's codec for the OID, then decode
	rawInt2                  // binary int2
	rawInt4                  // binary int4
	rawInt8                  // binary int8
	rawFloat8                // binary float8
	rawBool                  // binary bool
	rawText                  // text, varchar, bpchar, name: the bytes are the text, in either format
)

func newRowDecoder(rows pgx.Rows, cols []source.ColumnRef) *rowDecoder {
	fields := rows.FieldDescriptions()
	d := &rowDecoder{typeMap: rows.Conn().TypeMap(), fields: fields, cols: cols, fast: make([]rawKind, len(fields))}
	for i, fd := range fields {
		d.fast[i] = rawKindOf(fd, cols[i].Kind)
	}
	return d
}

func rawKindOf(fd pgconn.FieldDescription, kind value.Kind) rawKind {
	switch fd.DataTypeOID {
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID:
		if kind == value.JSON {
			return rawCodec
		}
		return rawText
	}
	if fd.Format != pgx.BinaryFormatCode {
		return rawCodec
	}
	switch fd.DataTypeOID {
	case pgtype.Int2OID:
		return rawInt2
	case pgtype.Int4OID:
		return rawInt4
	case pgtype.Int8OID:
		return rawInt8
	case pgtype.Float8OID:
		return rawFloat8
	case pgtype.BoolOID:
		return rawBool
	}
	return rawCodec
}

// decode fills row from the raw column values of the current row.
func (d *rowDecoder) decode(raw [][]byte, row value.Row) error {
	for i, b := range raw {
		if b == nil {
			row[i] = value.NullValue()
			continue
		}
		if v, ok := fastValue(d.fast[i], b); ok {
			row[i] = v
			continue
		}
		v, err := d.codecValue(i, b)
		if err != nil {
			return err
		}
		row[i] = decode(v, d.cols[i].Kind, d.cols[i].Elem)
	}
	return nil
}

// fastValue reads b as kind; false: the codec reads it (another kind, or a
// length the type cannot have, which the codec reports).
func fastValue(kind rawKind, b []byte) (value.Value, bool) {
	switch {
	case kind == rawText:
		return value.StringValue(string(b)), true
	case kind == rawInt2 && len(b) == 2:
		return value.IntValue(int64(int16(binary.BigEndian.Uint16(b)))), true
	case kind == rawInt4 && len(b) == 4:
		return value.IntValue(int64(int32(binary.BigEndian.Uint32(b)))), true
	case kind == rawInt8 && len(b) == 8:
		return value.IntValue(int64(binary.BigEndian.Uint64(b))), true
	case kind == rawFloat8 && len(b) == 8:
		return value.FloatValue(math.Float64frombits(binary.BigEndian.Uint64(b))), true
	case kind == rawBool && len(b) == 1:
		return value.BoolValue(b[0] == 1), true
	}
	return value.Value{}, false
}

// codecValue is what rows.Values() returns for column i.
func (d *rowDecoder) codecValue(i int, b []byte) (any, error) {
	fd := &d.fields[i]
	if dt, ok := d.typeMap.TypeForOID(fd.DataTypeOID); ok {
		return dt.Codec.DecodeValue(d.typeMap, fd.DataTypeOID, fd.Format, b)
	}
	if fd.Format == pgx.TextFormatCode {
		return string(b), nil
	}
	return append([]byte(nil), b...), nil
}
