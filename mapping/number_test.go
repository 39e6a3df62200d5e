package mapping

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNormalizeNumber(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{"0", "0", ""},
		{"-0", "0", ""},
		{"0.000", "0", ""},
		{"007", "7", ""},
		{"+12.50", "12.5", ""},
		{"-12.3400", "-12.34", ""},
		{"1e3", "1000", ""},
		{"1.5E-3", "0.0015", ""},
		{"123456789012345678901234567890.12345678", "123456789012345678901234567890.12345678", ""},
		{"99999999999999999999999999999999999999", "99999999999999999999999999999999999999", ""},
		{"999999999999999999999999999999999999999", "", "has 39 significant digits"},
		{"12345678901234567890123456789012345678.9", "", "has 39 significant digits"},
		{"1000000000000000000000000000000000000000000", "1000000000000000000000000000000000000000000", ""},
		{"1E+126", "", "larger than DynamoDB's largest number"},
		{"9.9E+125", "990000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000", ""},
		{"1E-130", "0." + strings.Repeat("0", 129) + "1", ""},
		{"1E-131", "", "smaller than DynamoDB's smallest"},
		{"abc", "", "not a number"},
		{"1.2.3", "", "not a number"},
		{"", "", "not a number"},
		{"1e", "", "not a number"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := NormalizeNumber(c.in)
			if c.err != "" {
				require.Error(t, err)
				require.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestNumberDigits(t *testing.T) {
	require.Equal(t, 1, NumberDigits("100"))
	require.Equal(t, 3, NumberDigits("-0.00123"))
	require.Equal(t, 38, NumberDigits(strings.Repeat("9", 38)))
}
