package mapping

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

func raceSchema() *Schema {
	col := func(name string, k value.Kind) source.Column { return source.Column{Name: name, Kind: k} }
	return &Schema{Tables: map[source.TableRef]*source.Table{
		{Name: "race_results"}: {Ref: source.TableRef{Name: "race_results"}, PrimaryKey: []string{"race_id", "racer_id"},
			Unique:  [][]string{{"race_id", "racer_id"}},
			Columns: []source.Column{col("race_id", value.Int), col("racer_id", value.Int), col("total_output", value.Int)}},
		{Name: "race_readings"}: {Ref: source.TableRef{Name: "race_readings"}, PrimaryKey: []string{"race_id", "racer_id", "second"},
			Unique:  [][]string{{"race_id", "racer_id", "second"}},
			Columns: []source.Column{col("race_id", value.Int), col("racer_id", value.Int), col("second", value.Int), col("cadence", value.Int), col("output", value.Int)}},
	}}
}

func nestPlan(t *testing.T, nest string) *EntityPlan {
	t.Helper()
	return nestMapping(t, nest).Entity("result")
}

// nestMapping compiles the race results with the given nest: entry.
func nestMapping(t *testing.T, nest string) *Plan {
	t.Helper()
	cfg, err := Parse([]byte(`
version: 1
source: {driver: postgres}
target:
  table: alleycat
  key: {pk: PK, sk: SK}
  attribute_types: {Numeric: N}
  indexes:
    ByOutput: {type: local, sk: Numeric}
  type_attribute: _type
entities:
  result:
    from: race_results
    key: {pk: "racer-${racer_id}", sk: "race-${race_id}"}
    index: {ByOutput: {sk: "${total_output}"}}
    nest:
      Readings:
` + nest))
	require.NoError(t, err)
	p, err := Compile(cfg, raceSchema(), Options{})
	require.NoError(t, err)
	return p
}

func readings(n int) []value.Row {
	out := make([]value.Row, n)
	for s := 1; s <= n; s++ {
		out[s-1] = value.Row{value.IntValue(7), value.IntValue(1), value.IntValue(int64(s)), value.IntValue(int64(60 + s%60)), value.IntValue(int64(100 + s%300))}
	}
	return out
}

func TestNestQueryJoinsParentAndOrders(t *testing.T) {
	e := nestPlan(t, `
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        order_by: [second]
        attributes: {s: second, c: cadence, o: output}
`)
	require.Len(t, e.Nests(), 1)
	q := e.Nests()[0].Query
	require.Equal(t, []string{"race_id", "racer_id", "second"}, q.Key)
	require.Equal(t, []string{"", "", childAlias}, q.KeyAliases)
	require.Equal(t, source.Join{Alias: childAlias, Table: source.TableRef{Name: "race_readings"}, Inner: true,
		On: []source.JoinOn{{Column: "race_id", RefColumn: "race_id"}, {Column: "racer_id", RefColumn: "racer_id"}}}, q.Joins[0])
	require.Equal(t, []string{"race_id", "racer_id", "_child.second", "_child.cadence", "_child.output"}, e.Nests()[0].ChildColumnNames())
}

func TestNestListFitsInOneItem(t *testing.T) {
	e := nestPlan(t, `
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        order_by: [second]
        attributes: {s: second, c: cadence, o: output}
`)
	items, err := e.BuildNested(value.Row{value.IntValue(7), value.IntValue(1), value.IntValue(12345)}, [][]value.Row{readings(3)}, nil, nil)
	require.NoError(t, err)
	require.Len(t, items, 1)
	l := items[0].Attrs["Readings"].(*types.AttributeValueMemberL).Value
	require.Len(t, l, 3)
	require.Equal(t, map[string]types.AttributeValue{
		"s": &types.AttributeValueMemberN{Value: "2"}, "c": &types.AttributeValueMemberN{Value: "62"}, "o": &types.AttributeValueMemberN{Value: "102"},
	}, l[1].(*types.AttributeValueMemberM).Value)
	require.Equal(t, ItemSize(items[0].Attrs), items[0].Size)
	// No children: an empty list, not a missing attribute.
	items, err = e.BuildNested(value.Row{value.IntValue(7), value.IntValue(2), value.IntValue(1)}, [][]value.Row{nil}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, &types.AttributeValueMemberL{Value: []types.AttributeValue{}}, items[0].Attrs["Readings"])
}

// A 3,600-reading series over max_bytes is split: the item keeps its key,
// index key and attributes plus the part count, and the parts, each whole
// part (keys, Part and type attribute included) under the limit, hold the
// readings in order. The parts come first and the head last.
func TestNestSplitBoundaries(t *testing.T) {
	for _, max := range []int{2000, 16000, 60000} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			e := nestPlan(t, fmt.Sprintf(`
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        order_by: [second]
        attributes: {s: second, c: cadence, o: output}
        max_bytes: %d
        overflow: split
`, max))
			items, err := e.BuildNested(value.Row{value.IntValue(7), value.IntValue(1), value.IntValue(12345)}, [][]value.Row{readings(3600)}, nil, nil)
			require.NoError(t, err)
			head := items[len(items)-1]
			require.Equal(t, &types.AttributeValueMemberS{Value: "race-7"}, head.Attrs["SK"])
			require.Equal(t, len(items)-1, head.SplitParts)
			require.Equal(t, len(items)-1, head.Part)
			require.Equal(t, &types.AttributeValueMemberN{Value: "12345"}, head.Attrs["Numeric"], "the item stays in the index")
			require.NotContains(t, head.Attrs, "Readings")
			parts := items[:len(items)-1]
			require.Equal(t, &types.AttributeValueMemberN{Value: fmt.Sprint(len(parts))}, head.Attrs["Parts"])
			require.Greater(t, len(parts), 1)
			var seconds []string
			prevSK := "race-7"
			for i, p := range parts {
				sk := p.Attrs["SK"].(*types.AttributeValueMemberS).Value
				require.Equal(t, fmt.Sprintf("race-7#PART#%04d", i+1), sk)
				require.Greater(t, sk, prevSK, "parts sort after the item and in order")
				prevSK = sk
				require.Equal(t, &types.AttributeValueMemberN{Value: fmt.Sprint(i + 1)}, p.Attrs["Part"])
				require.NotContains(t, p.Attrs, "Numeric", "parts stay out of indexes")
				require.Equal(t, head.Attrs["_type"], p.Attrs["_type"])
				require.Equal(t, i+1, p.SplitPart)
				require.Equal(t, ItemSize(p.Attrs), p.Size)
				require.LessOrEqual(t, p.Size, max, "part %d, whole", i+1)
				require.Equal(t, "racer-1\x00"+sk, p.Key)
				for _, el := range p.Attrs["Readings"].(*types.AttributeValueMemberL).Value {
					seconds = append(seconds, el.(*types.AttributeValueMemberM).Value["s"].(*types.AttributeValueMemberN).Value)
				}
			}
			require.Len(t, seconds, 3600, "every reading, once")
			for i, s := range seconds {
				require.Equal(t, fmt.Sprint(i+1), s, "in order")
			}
			// Greedy packing: a part plus the next part's first element would
			// not have fit.
			for i := 0; i+1 < len(parts); i++ {
				next := parts[i+1].Attrs["Readings"].(*types.AttributeValueMemberL).Value[0]
				require.Greater(t, parts[i].Size+1+ValueSize(next), max)
			}
		})
	}
}

func TestNestGzipAndReject(t *testing.T) {
	e := nestPlan(t, `
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        order_by: [second]
        attributes: {s: second, c: cadence, o: output}
        max_bytes: 16000
        overflow: gzip
`)
	items, err := e.BuildNested(value.Row{value.IntValue(7), value.IntValue(1), value.IntValue(1)}, [][]value.Row{readings(3600)}, nil, nil)
	require.NoError(t, err)
	require.Len(t, items, 1)
	b := items[0].Attrs["Readings"].(*types.AttributeValueMemberB).Value
	require.LessOrEqual(t, len("Readings")+len(b), 16000)
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	doc, err := io.ReadAll(zr)
	require.NoError(t, err)
	// Rows are laid out as the query selects: parent key, second, cadence, output.
	var back []map[string]json.Number
	require.NoError(t, json.Unmarshal(doc, &back))
	require.Len(t, back, 3600)
	require.Equal(t, json.Number("3600"), back[3599]["s"])
	require.Equal(t, json.Number(fmt.Sprint(100+3600%300)), back[3599]["o"])

	e = nestPlan(t, `
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        order_by: [second]
        attributes: {s: second, c: cadence, o: output}
        max_bytes: 5000
`)
	_, err = e.BuildNested(value.Row{value.IntValue(7), value.IntValue(1), value.IntValue(1)}, [][]value.Row{readings(3600)}, nil, nil)
	var rerr *RowError
	require.ErrorAs(t, err, &rerr)
	require.Equal(t, "Readings", rerr.Attribute)
	require.Contains(t, err.Error(), "entity result, row race_id=7, racer_id=1: Readings nested attribute is")
	require.Contains(t, err.Error(), "over max_bytes 5000 (overflow: reject)")
}

func TestNestMapKeyedByColumn(t *testing.T) {
	e := nestPlan(t, `
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        as: map
        key: second
        attributes: {c: cadence, o: output}
`)
	items, err := e.BuildNested(value.Row{value.IntValue(7), value.IntValue(1), value.IntValue(1)}, [][]value.Row{readings(3)}, nil, nil)
	require.NoError(t, err)
	m := items[0].Attrs["Readings"].(*types.AttributeValueMemberM).Value
	require.Equal(t, []string{"1", "2", "3"}, sortedKeys(m))
}

func sortedKeys(m map[string]types.AttributeValue) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestNestCompileErrors(t *testing.T) {
	cases := map[string]struct{ nest, want string }{
		"on not the parent key": {`
        from: race_readings
        on: {race_id: race_id, racer_id: total_output}
        attributes: {o: output}
`, `"total_output" is not a primary-key column of result`},
		"on incomplete": {`
        from: race_readings
        on: {race_id: race_id}
        order_by: [racer_id, second]
        attributes: {o: output}
`, `pair every primary-key column of result (race_id, racer_id)`},
		"order not unique": {`
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        order_by: [cadence]
        attributes: {o: output}
`, `must identify a row of race_readings`},
		"bad overflow": {`
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        order_by: [second]
        attributes: {o: output}
        overflow: truncate
`, `unknown overflow "truncate" (split, gzip or reject)`},
		"unknown child column": {`
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        order_by: [second]
        attributes: {o: outptu}
`, `entities.result.nest.Readings.attributes.o: unknown column "outptu" in table race_readings (did you mean "output"?)`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, err := Parse([]byte(`
version: 1
source: {driver: postgres}
target: {table: alleycat, key: {pk: PK, sk: SK}}
entities:
  result:
    from: race_results
    key: {pk: "racer-${racer_id}", sk: "race-${race_id}"}
    nest:
      Readings:
` + c.nest))
			require.NoError(t, err)
			_, err = Compile(cfg, raceSchema(), Options{})
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
			require.True(t, strings.HasPrefix(err.Error(), "entities.result.nest.Readings"), err.Error())
		})
	}
}

// Parts of a map split and of a split with no max_bytes are held, whole, to
// their limit: max_bytes, or the item limit less the split margin; an
// element with no room beside a part's key and attributes is an error.
func TestNestSplitWholePartLimits(t *testing.T) {
	t.Run("map", func(t *testing.T) {
		e := nestPlan(t, `
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        as: map
        key: second
        attributes: {c: cadence, o: output}
        max_bytes: 700
        overflow: split
`)
		items, err := e.BuildNested(value.Row{value.IntValue(7), value.IntValue(1), value.IntValue(1)}, [][]value.Row{readings(500)}, nil, nil)
		require.NoError(t, err)
		head := items[len(items)-1]
		require.Equal(t, len(items)-1, head.SplitParts)
		n := 0
		for _, p := range items[:len(items)-1] {
			require.Equal(t, ItemSize(p.Attrs), p.Size)
			require.LessOrEqual(t, p.Size, 700)
			n += len(p.Attrs["Readings"].(*types.AttributeValueMemberM).Value)
		}
		require.Equal(t, 500, n)
	})
	t.Run("no max_bytes", func(t *testing.T) {
		e := nestPlan(t, `
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        order_by: [second]
        attributes: {s: second, c: cadence, o: output}
        overflow: split
`)
		items, err := e.BuildNested(value.Row{value.IntValue(7), value.IntValue(1), value.IntValue(1)}, [][]value.Row{readings(26000)}, nil, nil)
		require.NoError(t, err)
		require.Len(t, items, 3, "two parts and the head")
		for _, p := range items[:2] {
			require.Equal(t, ItemSize(p.Attrs), p.Size)
			require.LessOrEqual(t, p.Size, MaxItemBytes-SplitMarginBytes)
		}
		require.Greater(t, items[0].Size, MaxItemBytes-SplitMarginBytes-100, "the first part is filled")
		require.Equal(t, MaxItemBytes-SplitMarginBytes, e.SplitLimit())
	})
	t.Run("element too large", func(t *testing.T) {
		e := nestPlan(t, `
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        order_by: [second]
        attributes: {s: second, c: cadence, o: output}
        max_bytes: 60
        overflow: split
`)
		row := value.Row{value.IntValue(7), value.IntValue(1), value.IntValue(1)}
		_, err := e.BuildNested(row, [][]value.Row{readings(10)}, nil, nil)
		require.ErrorContains(t, err, "bytes of a part's key and attributes it is over max_bytes 60")
		// Unchecked, the element gets a part of its own, over the limit.
		items, err := e.BuildUnchecked(row, [][]value.Row{readings(10)}, nil)
		require.NoError(t, err)
		require.Len(t, items, 11)
		require.Greater(t, items[0].Size, 60)
	})
}
