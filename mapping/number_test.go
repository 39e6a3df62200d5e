package mapping

import (
	"fmt"
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

// dynaliteNumberSize is dynalite's size of a number (db/index.js valSize,
// case 'N'), written from its source with big.js's representation: c the
// digits without leading or trailing zeros, e the power of ten of the first
// digit.
func dynaliteNumberSize(t *testing.T, s string) int {
	t.Helper()
	neg, digits, exp, err := parseDecimal(s)
	require.NoError(t, err)
	if digits == "" {
		return 1
	}
	d := len(digits)
	e := exp + d - 1
	n := 1 + (d+1)/2
	if d%2 == 0 && e%2 == 0 {
		n++
	}
	if neg {
		n++
	}
	return n
}

// The number size never undercounts the server's, whatever the digits'
// alignment on the decimal point, and is at most one byte more.
func TestNumberSizeBoundsServer(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{"0", 2},
		{"7", 2},
		{"407.5", 4}, // 04|07|50: where (4+1)/2+1 counted 3
		{"4075", 4},
		{"-407.5", 5},
		{"0.001", 2},
		{"1E+100", 2},
		{"12", 3},
		{"99999999999999999999999999999999999999", 21},
		{"-12345678901234567890123456789012345678", 22},
		{"1234567890123456789012345678901234567.8", 21},
	}
	for _, c := range cases {
		got := numberSize(c.in)
		require.Equal(t, c.want, got, c.in)
		server := dynaliteNumberSize(t, c.in)
		require.GreaterOrEqual(t, got, server, c.in)
		require.LessOrEqual(t, got, server+1, c.in)
	}
	// Every digit count at both exponent parities, both signs.
	for d := 1; d <= 38; d++ {
		for _, shift := range []int{-3, -2, -1, 0, 1, 2} {
			for _, sign := range []string{"", "-"} {
				s := sign + strings.Repeat("7", d) + "E" + fmt.Sprint(shift)
				require.GreaterOrEqual(t, numberSize(s), dynaliteNumberSize(t, s), s)
			}
		}
	}
}

// TestIntegerSizeIsNumberSize: the integer shortcut counts what the general
// parse counts, and declines every other form.
func TestIntegerSizeIsNumberSize(t *testing.T) {
	general := func(s string) int {
		neg, digits, _, err := parseDecimal(s)
		require.NoError(t, err, s)
		n := 2 + len(digits)/2
		if neg && digits != "" {
			n++
		}
		return n
	}
	for _, s := range []string{"0", "-0", "1", "-1", "10", "-100", "1200", "9223372036854775807", "-9223372036854775808",
		"18446744073709551615", "100000000000000000000000000000000000000", "-12345678901234567890123456789012345678"} {
		n, ok := integerSize(s)
		require.True(t, ok, s)
		require.Equal(t, general(s), n, s)
	}
	for _, s := range []string{"", "-", "00", "01", "-01", "+1", "1.0", "1e3", " 1", "1a", "--1"} {
		_, ok := integerSize(s)
		require.False(t, ok, s)
	}
}
