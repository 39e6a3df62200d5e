package mapping

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// sparse: true on an entity's index: entry changes what plan is told, not
// the item: an item a NULL leaves out of the index is listed as SparseOut
// (never as HalfKeys), whatever the shape of the index's key, and its half
// key is left off as without it.
func TestSparseIndexEntry(t *testing.T) {
	schema := &Schema{Tables: map[source.TableRef]*source.Table{{Name: "employees"}: {
		Ref: source.TableRef{Name: "employees"}, PrimaryKey: []string{"employee_id"}, Unique: [][]string{{"employee_id"}},
		Columns: []source.Column{{Name: "employee_id", Kind: value.Int}, {Name: "reports_to", Kind: value.Int}},
	}}}
	const m = `
version: 1
source: {driver: postgres}
target:
  table: shop
  key: {pk: PK, sk: SK}
  indexes:
    Reports: {type: global, pk: ReportsPK, sk: ReportsSK}
    Inverted: {type: global, pk: ManagerPK, sk: SK}
entities:
  employee:
    from: employees
    key: {pk: "EMPLOYEE#${employee_id}", sk: "EMPLOYEE"}
    index:
      Reports: {pk: "EMPLOYEE#${reports_to}", sk: "EMPLOYEE#${employee_id}"REPORTS}
      Inverted: {pk: "${reports_to}"INVERTED}
`
	top := value.Row{value.IntValue(2), value.NullValue()}
	report := value.Row{value.IntValue(1), value.IntValue(2)}
	for _, tc := range []struct {
		name, reports, inverted string
		half, sparse            []string
	}{
		{"neither marked", "", "", []string{"Reports"}, nil},
		{"the half-key index marked", ", sparse: true", "", nil, []string{"Reports"}},
		{"both marked", ", sparse: true", ", sparse: true", nil, []string{"Reports", "Inverted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := compileString(t, strings.NewReplacer("REPORTS", tc.reports, "INVERTED", tc.inverted).Replace(m), schema)
			require.NoError(t, err)
			ep := p.Entity("employee")
			items, err := ep.Build(top, nil)
			require.NoError(t, err)
			require.Equal(t, tc.half, items[0].HalfKeys())
			require.ElementsMatch(t, tc.sparse, items[0].SparseOut())
			require.NotContains(t, items[0].Attrs, "ReportsSK", "the half key is left off either way")
			require.NotContains(t, items[0].Attrs, "ManagerPK")

			items, err = ep.Build(report, nil)
			require.NoError(t, err)
			require.Empty(t, items[0].HalfKeys())
			require.Empty(t, items[0].SparseOut(), "an employee with a manager is in both indexes")
			require.Contains(t, items[0].Attrs, "ReportsSK")
		})
	}
}

// sparse: false (or no sparse:) leaves a mapping's fingerprint as it was
// before the key existed, so checkpoints of existing mappings still match;
// sparse: true changes it, as any change of meaning does.
func TestSparseFingerprint(t *testing.T) {
	const m = `
version: 1
source: {driver: postgres}
target: {table: shop, key: {pk: PK, sk: SK}, indexes: {GSI1: {type: global, pk: G, sk: SK}}}
entities:
  e: {from: t, key: {pk: "E#${id}", sk: E}, index: {GSI1: {pk: "${g}"X}}}
`
	fp := func(body string) string {
		cfg, err := Parse([]byte(body))
		require.NoError(t, err)
		p, err := Compile(cfg, nil, Options{})
		require.NoError(t, err)
		return p.Fingerprint("src")
	}
	plain, sparse := fp(strings.Replace(m, "X", "", 1)), fp(strings.Replace(m, "X", ", sparse: true", 1))
	require.Equal(t, plain, fp(strings.Replace(m, "X", ", sparse: false", 1)))
	require.NotEqual(t, plain, sparse)
}

// TestItemStaysSmall: every item of a run is an Item, built by the
// hundred thousand a second; what plan alone reads goes in one slice
// (OutOf), not a field each.
func TestItemStaysSmall(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(Item{}), uintptr(160))
}
