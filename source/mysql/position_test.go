package mysql

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

func TestBinlogPositions(t *testing.T) {
	for _, text := range []string{"binlog.000012:4711", "binlog.000001:4;gtid=0-1-6", "mysql-bin.000003:120;gtid=3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"} {
		p, err := parsePos(source.Position(text))
		require.NoError(t, err, text)
		require.Equal(t, text, p.String())
	}
	for _, bad := range []string{"", "binlog.000001", "binlog.000001:x"} {
		_, err := parsePos(source.Position(bad))
		require.Error(t, err, bad)
	}

	mariadb := &Changes{src: &Source{mariadb: true}}
	mysql := &Changes{src: &Source{}}
	tests := []struct {
		c    *Changes
		a, b string
		want int
	}{
		{mariadb, "binlog.000001:400", "binlog.000001:400", 0},
		{mariadb, "binlog.000001:400", "binlog.000001:500", -1},
		// Files order by number, not by text.
		{mariadb, "binlog.000009:900", "binlog.000010:4", -1},
		{mariadb, "binlog.999999:4", "binlog.1000000:4", -1},
		// GTID sets decide where both have one.
		{mariadb, "binlog.000002:4;gtid=0-1-7", "binlog.000001:900;gtid=0-1-6", 1},
		{mariadb, "binlog.000001:900;gtid=0-1-6", "binlog.000001:900;gtid=0-1-6", 0},
		{mariadb, "binlog.000001:900;gtid=0-1-6,1-1-3", "binlog.000001:950;gtid=0-1-6,1-1-4", -1},
		// Neither contains the other: file and offset decide.
		{mariadb, "binlog.000001:900;gtid=0-1-6,1-1-9", "binlog.000001:950;gtid=0-1-7,1-1-4", -1},
		// Only one has a GTID set.
		{mariadb, "binlog.000001:900;gtid=0-1-6", "binlog.000001:950", -1},
		{mysql, "b.000001:4;gtid=3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", "b.000001:4;gtid=3e11fa47-71ca-11e1-9e33-c80aa9429562:1-7", -1},
		{mysql, "b.000001:4;gtid=3e11fa47-71ca-11e1-9e33-c80aa9429562:1-7", "b.000001:4;gtid=3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", 1},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.c.Compare(source.Position(tt.a), source.Position(tt.b)), "%s vs %s", tt.a, tt.b)
		require.Equal(t, -tt.want, tt.c.Compare(source.Position(tt.b), source.Position(tt.a)), "%s vs %s", tt.b, tt.a)
	}
}

func TestBinlogDistance(t *testing.T) {
	c := (&Source{}).NewChanges(1)
	c.maxBinlogSize.Store(1000)
	for _, tt := range []struct {
		from, to string
		want     int64
	}{
		{"b.000001:100", "b.000001:350", 250},
		{"b.000001:350", "b.000001:100", 0},
		{"b.000001:100;gtid=0-1-1", "b.000001:350;gtid=0-1-2", 250},
		// Across files: the rest of the first, whole files between, the
		// offset in the last.
		{"b.000001:100", "b.000002:50", 900 + 50},
		{"b.000001:100", "b.000004:50", 900 + 2*1000 + 50},
		{"b.000004:100", "b.000001:50", 0},
		{"nonsense", "b.000001:50", 0},
	} {
		require.Equal(t, tt.want, c.Distance(source.Position(tt.from), source.Position(tt.to)), "%s → %s", tt.from, tt.to)
	}
	// With the files' sizes known (SHOW BINARY LOGS), they are used; a
	// file without one counts as max_binlog_size.
	c.fileSizes.Store(&map[int64]int64{1: 400, 2: 300})
	require.EqualValues(t, 300+300+1000+50, c.Distance("b.000001:100", "b.000004:50"))
}

func TestDefaultServerID(t *testing.T) {
	a, b := DefaultServerID("portfolios"), DefaultServerID("orders")
	require.Equal(t, a, DefaultServerID("portfolios"))
	require.NotEqual(t, a, b)
	for _, id := range []uint32{a, b, DefaultServerID("")} {
		require.GreaterOrEqual(t, id, uint32(1<<31))
		require.Less(t, id, uint32(1<<32-1))
	}
}

func TestBinlogText(t *testing.T) {
	col := func(dbType string) *source.Column { return &source.Column{Name: "c", DBType: dbType} }
	for _, tt := range []struct {
		v      any
		dbType string
		want   string
	}{
		{int8(-1), "tinyint(3) unsigned", "255"},
		{int8(-1), "tinyint(4)", "-1"},
		{int16(-1), "smallint(5) unsigned", "65535"},
		{int32(-1), "mediumint(8) unsigned", "16777215"},
		{int32(-1), "int(10) unsigned", "4294967295"},
		{int64(-1), "bigint(20) unsigned", "18446744073709551615"},
		{int64(-9223372036854775808), "bigint(20)", "-9223372036854775808"},
		{int64(5), "bit(3)", "5"},
		{int64(2), "enum('happy','sad')", "sad"},
		{int64(0), "enum('happy','sad')", ""},
		{int64(5), "set('a','b','c')", "a,c"},
		{int64(1), "enum('it''s','x')", "it's"},
		{1901, "year(4)", "1901"},
		{float32(-3.4e38), "float", "-3.4e+38"},
		{0.1, "double", "0.1"},
		{"1234.5000", "decimal(12,4)", "1234.5000"},
		{"ab", "char(6)", "ab"},
		{[]byte{0xFF}, "binary(3)", "\xff\x00\x00"},
		{[]byte{0xFF}, "varbinary(3)", "\xff"},
	} {
		got, err := binlogText(tt.v, col(tt.dbType))
		require.NoError(t, err)
		require.Equal(t, tt.want, string(got), "%T %v as %s", tt.v, tt.v, tt.dbType)
	}
	got, err := binlogText(nil, col("int"))
	require.NoError(t, err)
	require.Nil(t, got)
	_, err = binlogText(struct{}{}, col("int"))
	require.Error(t, err)
}

func TestDDLMentions(t *testing.T) {
	ref := source.TableRef{Schema: "shop", Name: "servers"}
	for _, tt := range []struct {
		q, schema string
		want      bool
	}{
		{"ALTER TABLE servers DROP COLUMN portfolio_id", "shop", true},
		{"ALTER TABLE servers DROP COLUMN portfolio_id", "other", false},
		{"ALTER TABLE shop.servers ADD x int", "other", true},
		{"ALTER TABLE other.servers ADD x int", "shop", false},
		{"RENAME TABLE servers TO old_servers, x TO servers", "shop", true},
		{"ALTER TABLE servers_archive ADD x int", "shop", false},
		{"DROP TABLE IF EXISTS servers,databases", "shop", true},
		{"ALTER TABLE servers(", "shop", true},
	} {
		require.Equal(t, tt.want, mentions(tt.q, tt.schema, ref), "%s in %s", tt.q, tt.schema)
	}
	for q, verb := range map[string]bool{
		"ALTER TABLE t ADD c int":            true,
		"/* a comment */ DROP TABLE t":       true,
		"truncate table t":                   true,
		"CREATE OR REPLACE TABLE t (id int)": true,
		"CREATE TABLE t (id int)":            false,
		"INSERT INTO t VALUES (1)":           false,
		"SAVEPOINT alter_point":              false,
	} {
		require.Equal(t, verb, ddlVerb.MatchString(q), q)
	}
}

func TestBinlogTextEmptyIsNotNull(t *testing.T) {
	for _, v := range []any{"", []byte{}, []byte(nil)} {
		got, err := binlogText(v, &source.Column{Name: "c", DBType: "text"})
		require.NoError(t, err)
		require.NotNil(t, got, "%#v", v)
	}
}

// An empty blob, from the text protocol or the binlog, stays an empty
// (non-nil) byte string: nil would be written {"B":null}, which DynamoDB
// refuses (the sync fuzzer's documents design, seed 42, found it).
func TestDecodeEmptyBlobIsNotNull(t *testing.T) {
	// An empty Bytes value is written as an empty binary, never null
	// (value.Value.Bytes, TestValuesReadBackWhatTheyHold): the decoder's
	// part is to keep it a Bytes value, not NULL.
	empty := value.BytesValue(nil)
	got, err := decode(sql.RawBytes{}, value.Bytes)
	require.NoError(t, err)
	require.Equal(t, empty, got)
	text, err := binlogText([]byte{}, &source.Column{Name: "c", DBType: "blob"})
	require.NoError(t, err)
	got, err = decode(text, value.Bytes)
	require.NoError(t, err)
	require.Equal(t, empty, got)
}
