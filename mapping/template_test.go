package mapping

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/golden"
	"github.com/dynafold/dynafold/value"
)

// templateRow is the row every template case renders against; columns are
// bound by position in templateCols.
var templateCols = []string{"id", "name", "amount", "price", "big", "ts", "day", "flag", "nothing", "server.portfolio_id", "neg", "uni"}

func templateRow() value.Row {
	ts := time.Date(2024, 3, 5, 14, 7, 12, 345678000, time.FixedZone("IST", 5*3600+1800))
	return value.Row{
		value.IntValue(42),
		value.StringValue("JeffSiteServer"),
		value.IntValue(7),
		value.DecimalValue("19.90"),
		value.DecimalValue("123456789012345678901234567890123456"),
		value.TimestampValue(ts),
		value.DateValue(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)),
		value.BoolValue(true),
		value.NullValue(),
		value.IntValue(1),
		value.IntValue(-3),
		value.StringValue("Zoë Müller 東京"),
	}
}

// bind resolves template columns against templateCols for tests that do
// not go through Compile.
func bind(t *testing.T, tmpl *Template) {
	t.Helper()
	for _, e := range tmpl.Exprs() {
		found := false
		for i, c := range templateCols {
			if c == e.Ref.String() {
				e.col, found = i, true
			}
		}
		require.True(t, found, "test column %s", e.Ref)
	}
}

func TestTemplateRenderGolden(t *testing.T) {
	cases := []string{
		"PORTFOLIO",
		"${id}",
		"SERVER#${name|lower}",
		"SERVER#${name|upper}",
		"${server.portfolio_id}#${name}",
		"ORDER#${amount|pad:8}",
		"${price|pad:4}",
		"${big}",
		"REPORT#${ts|iso}",
		"${ts}",
		"${ts|epoch}",
		"${ts|date}",
		"${day}",
		"${day|iso}",
		"${day|epoch}",
		"${flag}",
		"CONTESTANT#7#${id|shard:10}",
		"${name|shard:4}",
		"price is $$${price}",
		"${nothing}",
		"A#${nothing}#B",
		"${uni|upper}",
		"${neg|pad:3}",
		"${big|pad:10}",
		"",
	}
	var sb strings.Builder
	row := templateRow()
	for _, src := range cases {
		tmpl, err := ParseTemplate(src)
		require.NoError(t, err, src)
		bind(t, tmpl)
		s, ok, err := tmpl.Render(row)
		switch {
		case err != nil:
			fmt.Fprintf(&sb, "%-34q => error: %v\n", src, err)
		case !ok:
			fmt.Fprintf(&sb, "%-34q => NULL (attribute omitted)\n", src)
		default:
			fmt.Fprintf(&sb, "%-34q => %q\n", src, s)
		}
	}
	golden.Check(t, "templates.golden", sb.String())
}

func TestTemplateParseErrors(t *testing.T) {
	cases := map[string]string{
		"${id":          `unterminated "${" at offset 0`,
		"A$B":           `a lone "$" at offset 1`,
		"${}":           "empty column name",
		"${id|pad}":     `transform "pad" needs a number, e.g. pad:8`,
		"${id|pad:0}":   "pad needs a whole number from 1 to 64",
		"${id|lower:2}": `transform "lower" takes no argument`,
		"${id|reverse}": `unknown transform "reverse"`,
		"${a.b.c}":      `invalid column name "a.b.c"`,
		"${id|shard:x}": `shard needs a whole number`,
		"${na me}":      `invalid column name "na me"`,
		"x${.id}":       `invalid column name ".id"`,
	}
	for src, want := range cases {
		t.Run(src, func(t *testing.T) {
			_, err := ParseTemplate(src)
			require.Error(t, err)
			require.Contains(t, err.Error(), want)
		})
	}
}

// ShardOf is an on-disk contract: these values must never change. They
// were computed independently with a reference FNV-1a implementation.
func TestShardOfIsStable(t *testing.T) {
	require.Equal(t, 1, ShardOf("42", 10))
	require.Equal(t, 0, ShardOf("", 1))
	got := []int{}
	for i := 1; i <= 10; i++ {
		got = append(got, ShardOf(fmt.Sprint(i), 10))
	}
	require.Equal(t, []int{8, 1, 0, 5, 4, 7, 6, 7, 6, 6}, got)
}
