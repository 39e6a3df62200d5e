package mysql

import (
	"context"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/source"
)

// Shapes, the Source's and the Changes', are information_schema's column types (enum values keep their
// case), nullability and the primary key in key order, keyed by the refs
// as given, whether they name the DSN's database or not; a table that
// does not exist is absent.
func TestShapes(t *testing.T) {
	ctx := context.Background()
	src, raw := binlogSource(t)
	testenv.ExecSQL(t, "mysql", raw, `CREATE TABLE parcels (b int NOT NULL, a varchar(10) NOT NULL, kind enum('Box','crate'), n int unsigned, PRIMARY KEY (a, b));
		CREATE TABLE loose (v text)`)
	cfg, err := mysql.ParseDSN(raw)
	require.NoError(t, err)
	parcels, qualified := source.TableRef{Name: "parcels"}, source.TableRef{Schema: cfg.DBName, Name: "parcels"}
	loose, gone := source.TableRef{Name: "loose"}, source.TableRef{Name: "gone"}

	refs := []source.TableRef{parcels, qualified, loose, gone}
	got, err := src.Shapes(ctx, refs)
	require.NoError(t, err)
	viaChanges, err := src.NewChanges(1).Shapes(ctx, refs)
	require.NoError(t, err)
	require.Equal(t, got, viaChanges)
	want := &source.TableShape{Columns: map[string]source.ColumnShape{
		"a":    {Type: "varchar(10)", NotNull: true},
		"b":    {Type: "int(11)", NotNull: true},
		"kind": {Type: "enum('Box','crate')"},
		"n":    {Type: "int(10) unsigned"},
	}, Key: []string{"a", "b"}}
	require.Equal(t, map[source.TableRef]*source.TableShape{
		parcels:   want,
		qualified: want,
		loose:     {Columns: map[string]source.ColumnShape{"v": {Type: "text"}}},
	}, got)
}

func TestLowerType(t *testing.T) {
	require.Equal(t, "enum('A','it''s B')", lowerType("ENUM('A','it''s B')"))
	require.Equal(t, "int(10) unsigned zerofill", lowerType("INT(10) UNSIGNED ZEROFILL"))
}
