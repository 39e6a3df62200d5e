package design

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// memSnapshot serves rows from memory, per table, in key order (the first
// column is an integer key), and counts the rows each read emitted.
type memSnapshot struct {
	rows map[string][]value.Row
	read map[string]int
}

func (m *memSnapshot) Shards(context.Context, *source.Query, int) ([]source.Range, error) {
	return []source.Range{source.Full}, nil
}

func (m *memSnapshot) Count(context.Context, *source.Query, source.Range, bool) (int64, error) {
	return -1, nil
}

func (m *memSnapshot) ReadNested(context.Context, *source.Query, []*source.Query, source.Range, []value.Value, int, func(value.Row, [][]value.Row) error) error {
	return errors.New("fake snapshot: no nested reads")
}

func (m *memSnapshot) Read(ctx context.Context, q *source.Query, _ source.Range, _ []value.Value, _ int, emit func(value.Row) error) error {
	for _, row := range m.rows[q.Base.Name] {
		m.read[q.Base.Name]++
		if err := emit(append(value.Row(nil), row...)); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (m *memSnapshot) Info() source.SnapshotInfo { return source.SnapshotInfo{} }
func (m *memSnapshot) Retryable(error) bool      { return false }
func (m *memSnapshot) Close() error              { return nil }

// shopMapping is a small shop whose access patterns are past the first
// rows: customer 40's orders, the unshipped orders (from order 130 on),
// and an order by its id through the inverted index.
const shopMapping = `
version: 1
source: {driver: postgres}
target:
  table: shop
  key: {pk: PK, sk: SK}
  indexes:
    Inverted: {type: global, pk: SK, sk: PK}
    Unshipped: {type: global, pk: UnshippedPK, sk: SK}
  type_attribute: _type
entities:
  customer:
    from: customers
    key: {pk: "CUSTOMER#${id}", sk: "CUSTOMER#${id}"}
  order:
    from: orders
    key: {pk: "CUSTOMER#${customer_id}", sk: "ORDER#${id}"}
    index:
      Unshipped: {pk: "UNSHIPPED", when: {column: shipped, is_null: true}}
access_patterns:
  - name: customer 40 with its orders
    query: {pk: "CUSTOMER#40"}
  - name: the unshipped orders
    query: {index: Unshipped, pk: "UNSHIPPED"}
  - name: order 77 by its id
    query: {index: Inverted, pk: "ORDER#77"}
`

func shopPlan(t *testing.T) *mapping.Plan {
	t.Helper()
	tbl := func(name string, cols ...source.Column) *source.Table {
		return &source.Table{Ref: source.TableRef{Name: name}, PrimaryKey: []string{"id"}, Unique: [][]string{{"id"}}, Columns: cols}
	}
	schema := &mapping.Schema{Tables: map[source.TableRef]*source.Table{
		{Name: "customers"}: tbl("customers", source.Column{Name: "id", Kind: value.Int}),
		{Name: "orders"}:    tbl("orders", source.Column{Name: "id", Kind: value.Int}, source.Column{Name: "customer_id", Kind: value.Int}, source.Column{Name: "shipped", Kind: value.String}),
	}}
	cfg, err := mapping.Parse([]byte(shopMapping))
	require.NoError(t, err)
	p, err := mapping.Compile(cfg, schema, mapping.Options{})
	require.NoError(t, err)
	return p
}

// shopRows: customers 1…50; orders 1…150, order i of customer i%50+1,
// shipped before order 130.
func shopRows() map[string][]value.Row {
	rows := map[string][]value.Row{}
	for i := int64(1); i <= 50; i++ {
		rows["customers"] = append(rows["customers"], value.Row{value.IntValue(i)})
	}
	for i := int64(1); i <= 150; i++ {
		shipped := value.StringValue("yes")
		if i >= 130 {
			shipped = value.NullValue()
		}
		rows["orders"] = append(rows["orders"], value.Row{value.IntValue(i), value.IntValue(i%50 + 1), shipped})
	}
	return rows
}

func keysOf(s *Samples) []string {
	var out []string
	for i := range s.Items {
		a := s.Items[i].Attributes()
		out = append(out, mapping.KeyText(a["PK"])+" / "+mapping.KeyText(a["SK"]))
	}
	return out
}

// The samples hold each entity's first rows and, besides, up to the same
// number of rows per entity of every access pattern's collection and of
// every index, however far on they are; each entity is read only as far
// as that takes.
func TestReadSamplesFindsEveryCollection(t *testing.T) {
	p := shopPlan(t)
	snap := &memSnapshot{rows: shopRows(), read: map[string]int{}}
	colls := append(PatternCollections(p), IndexCollections(p)...)
	s, err := ReadSamples(context.Background(), snap, p, SampleOptions{PerEntity: 3, Collections: colls})
	require.NoError(t, err)

	keys := keysOf(s)
	for _, want := range []string{
		"CUSTOMER#1 / CUSTOMER#1", "CUSTOMER#2 / CUSTOMER#2", "CUSTOMER#3 / CUSTOMER#3", // the first rows
		"CUSTOMER#2 / ORDER#1", "CUSTOMER#3 / ORDER#2", "CUSTOMER#4 / ORDER#3",
		"CUSTOMER#40 / CUSTOMER#40", "CUSTOMER#40 / ORDER#39", "CUSTOMER#40 / ORDER#89", "CUSTOMER#40 / ORDER#139", // customer 40
		"CUSTOMER#31 / ORDER#130", "CUSTOMER#32 / ORDER#131", "CUSTOMER#33 / ORDER#132", // unshipped
		"CUSTOMER#28 / ORDER#77", // by its id
	} {
		require.Contains(t, keys, want)
	}
	require.Len(t, keys, 14, "%q", keys)
	require.Equal(t, keys, keysOf(s), "in table order")

	got := map[string]int{}
	for _, c := range s.Collections {
		got[c.Name] = c.Items
	}
	require.Equal(t, map[string]int{
		`access pattern "customer 40 with its orders"`: 4,
		`access pattern "the unshipped orders"`:        4, // 130, 131, 132 and 139 (customer 40's)
		`access pattern "order 77 by its id"`:          1,
		"index Inverted":                               14,
		"index Unshipped":                              4,
	}, got)
	require.Equal(t, 40, snap.read["customers"], "customers read up to customer 40")
	require.Equal(t, 139, snap.read["orders"], "orders read up to customer 40's third order")
	require.Empty(t, s.Capped)
}

// Without collections, or with none an entity's items can be in, an
// entity is read no further than its first rows, as before.
func TestReadSamplesFirstRowsOnly(t *testing.T) {
	p := shopPlan(t)
	snap := &memSnapshot{rows: shopRows(), read: map[string]int{}}
	s, err := ReadSamples(context.Background(), snap, p, SampleOptions{PerEntity: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"CUSTOMER#1 / CUSTOMER#1", "CUSTOMER#2 / CUSTOMER#2", "CUSTOMER#2 / ORDER#1", "CUSTOMER#3 / ORDER#2"}, keysOf(s))
	require.Equal(t, map[string]int{"customers": 2, "orders": 2}, snap.read)

	// "ORDER#…" is no customer's key: customers are not read for it.
	colls, err := SampleKeys(p, []string{"SK=ORDER#77"})
	require.NoError(t, err)
	snap.read = map[string]int{}
	_, err = ReadSamples(context.Background(), snap, p, SampleOptions{PerEntity: 2, Collections: colls})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"customers": 2, "orders": 77}, snap.read)
}

// A collection further on than MaxScan rows is not looked for, and the
// samples say which entities were read only in part.
func TestReadSamplesStopsAtMaxScan(t *testing.T) {
	p := shopPlan(t)
	snap := &memSnapshot{rows: shopRows(), read: map[string]int{}}
	s, err := ReadSamples(context.Background(), snap, p, SampleOptions{PerEntity: 2, Collections: PatternCollections(p), MaxScan: 100})
	require.NoError(t, err)
	require.Equal(t, []string{"order"}, s.Capped)
	require.Equal(t, "entities order were read only to their first 100 rows", s.CappedNote())
	require.Equal(t, 100, snap.read["orders"])
	for _, c := range s.Collections {
		if strings.Contains(c.Name, "unshipped") {
			require.Zero(t, c.Items, "order 130 is past the first 100 rows")
		}
	}
}

// --sample-keys names collections by a partition key value of the table,
// or ATTR=VALUE for an index's partition key attribute; a sort key is
// refused, and text before "=" that names no key attribute is part of a
// table value.
func TestSampleKeys(t *testing.T) {
	p := shopPlan(t)
	for _, tc := range []struct {
		value, attr, val, err string
	}{
		{"CUSTOMER#7", "PK", "CUSTOMER#7", ""},
		{"PK=CUSTOMER#7", "PK", "CUSTOMER#7", ""},
		{"UnshippedPK=UNSHIPPED", "UnshippedPK", "UNSHIPPED", ""},
		{"SK=ORDER#77", "SK", "ORDER#77", ""}, // SK keys the inverted index
		{"a=b", "PK", "a=b", ""},
		{"PK=", "", "", `--sample-keys "PK=": no partition key value`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			cs, err := SampleKeys(p, []string{tc.value})
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, cs, 1)
			require.Equal(t, [3]string{"--sample-keys " + tc.value, tc.attr, tc.val}, [3]string{cs[0].Name, cs[0].PK, cs[0].Value})
		})
	}
	// A table whose sort key keys no index.
	cfg, err := mapping.Parse([]byte(strings.Replace(shopMapping, "    Inverted: {type: global, pk: SK, sk: PK}\n", "", 1)))
	require.NoError(t, err)
	cfg.Patterns = cfg.Patterns[:2]
	p2, err := mapping.Compile(cfg, nil, mapping.Options{})
	require.NoError(t, err)
	_, err = SampleKeys(p2, []string{"SK=ORDER#77"})
	require.EqualError(t, err, "--sample-keys SK=ORDER#77: SK is a sort key, not the partition key of the table or of an index (PK, UnshippedPK)")
}

// The page counts, per access pattern, the sample items its query returns,
// and marks each row of every view with the item's table key.
func TestPageShowsPatternsSamples(t *testing.T) {
	p := shopPlan(t)
	m := New(p, "shop.yaml")
	snap := &memSnapshot{rows: shopRows(), read: map[string]int{}}
	require.NoError(t, m.ReadSource(context.Background(), snap, nil, "", SampleOptions{PerEntity: 3, Collections: append(PatternCollections(p), IndexCollections(p)...)}, nil))
	pg := m.page()
	var counts []string
	for _, pt := range pg.Patterns {
		counts = append(counts, fmt.Sprintf("%s: %d", pt.Name, pt.SampleItems))
	}
	require.Equal(t, []string{"customer 40 with its orders: 4", "the unshipped orders: 4", "order 77 by its id: 1"}, counts)
	var unshipped []string
	for _, v := range pg.Views {
		if v.ID == "view-index-Unshipped" {
			for _, g := range v.Groups {
				for _, r := range g.Rows {
					unshipped = append(unshipped, r.Key)
				}
			}
		}
	}
	require.Equal(t, []string{"CUSTOMER#31 / ORDER#130", "CUSTOMER#32 / ORDER#131", "CUSTOMER#33 / ORDER#132", "CUSTOMER#40 / ORDER#139"}, unshipped)
}
