package mapping

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/value"
)

// An error about a bad row quotes at most maxQuoted characters of the
// value, and says how long it was: a 100 KB document that is not a number
// must not land whole on stderr, in the report and in the reject file's
// reason (nor all of a secret a column holds).
func TestRowErrorsQuoteBoundedValues(t *testing.T) {
	long := strings.Repeat("qZtWmKxhRv", 10_000) // 100,000 bytes
	digits := strings.Repeat("1234567890", 10_000)
	for _, tc := range []struct {
		name string
		err  func() error
	}{
		{"not a number", func() error { _, err := Convert(value.StringValue(long), TypeN); return err }},
		{"not a number, exponent", func() error { _, err := Convert(value.StringValue("1e"+long), TypeN); return err }},
		{"too many digits", func() error { _, err := Convert(value.DecimalValue(digits), TypeN); return err }},
		{"too large", func() error { _, err := Convert(value.DecimalValue("1"+digits[:100]+"e200"), TypeN); return err }},
		{"not a boolean", func() error { _, err := Convert(value.StringValue(long), TypeBOOL); return err }},
		{"invalid UTF-8", func() error { _, err := Convert(value.StringValue(long+"\xff"), TypeS); return err }},
		{"binary not UTF-8", func() error { _, err := Convert(value.BytesValue([]byte(long+"\xff")), TypeS); return err }},
		{"duplicate in a set", func() error {
			_, err := Convert(value.ListValue([]value.Value{value.StringValue(long), value.StringValue(long)}), TypeSS)
			return err
		}},
		{"JSON key", func() error {
			_, err := Convert(value.JSONValue(`{"`+long+`": 1e999}`), TypeM)
			return err
		}},
		{"pad, not a whole number", func() error { _, err := pad(value.StringValue(long), 8); return err }},
		{"pad, too many digits", func() error { _, err := pad(value.StringValue(digits), 8); return err }},
		{"duplicate map key of nested rows", func() error {
			e := nestPlan(t, `
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        as: map
        key: second
        attributes: {c: cadence}
`)
			child := value.Row{value.IntValue(7), value.IntValue(1), value.StringValue(long), value.IntValue(60), value.IntValue(100)}
			_, err := e.BuildNested(value.Row{value.IntValue(7), value.IntValue(1), value.IntValue(1)}, [][]value.Row{{child, child}}, nil, nil)
			return err
		}},
		{"source key of a row error", func() error {
			return &RowError{Entity: "e", SourceKey: []KeyPart{{Column: "id", Value: value.StringValue(long)}, {Column: "n", Value: value.DecimalValue(digits)}}, Reason: "x"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			require.Error(t, err)
			msg := err.Error()
			require.Less(t, len(msg), 400, msg)
			require.Regexp(t, `…\(\d+ bytes\)`, msg)
			require.NotContains(t, msg, long[:maxQuoted+1])
			require.NotContains(t, msg, digits[:maxQuoted+1])
		})
	}
	// A short value is quoted whole, as before.
	_, err := Convert(value.StringValue("forty-two"), TypeN)
	require.EqualError(t, err, `"forty-two" is not a number`)
	require.Equal(t, `"`+long[:maxQuoted]+`"…(100000 bytes)`, quoteValue(long))
	require.Equal(t, `"é€"`, quoteValue("é€"))
	require.Equal(t, strings.Repeat("é", maxQuoted)+"…(130 bytes)", boundValue(strings.Repeat("é", maxQuoted+1)))
}
