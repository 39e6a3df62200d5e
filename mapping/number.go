package mapping

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DynamoDB's Number type: up to 38 significant digits, magnitude between
// 1E-130 and 9.99…E+125 (Amazon DynamoDB Developer Guide, "Data types").
const (
	maxNumberDigits = 38
	minNumberExp    = -130
	maxNumberExp    = 125
)

var errNotNumber = errors.New("not a number")

// NormalizeNumber checks that s is a number DynamoDB can store exactly and
// returns it in canonical form: no exponent, no leading zeros, no trailing
// fractional zeros, no "+", and "0" for any zero. It never goes through
// float64, so every digit of a NUMERIC(38) survives.
func NormalizeNumber(s string) (string, error) {
	neg, digits, exp, err := parseDecimal(s)
	if err != nil {
		return "", err
	}
	if digits == "" {
		return "0", nil
	}
	if len(digits) > maxNumberDigits {
		return "", fmt.Errorf("%s has %d significant digits; DynamoDB numbers hold at most %d", boundValue(s), len(digits), maxNumberDigits)
	}
	// adj is the power of ten of the most significant digit.
	adj := exp + len(digits) - 1
	if adj > maxNumberExp {
		return "", fmt.Errorf("%s is larger than DynamoDB's largest number (about 1E+126)", boundValue(s))
	}
	if adj < minNumberExp {
		return "", fmt.Errorf("%s is smaller than DynamoDB's smallest non-zero number (1E-130)", boundValue(s))
	}
	var sb strings.Builder
	if neg {
		sb.WriteByte('-')
	}
	switch {
	case exp >= 0:
		sb.WriteString(digits)
		sb.WriteString(strings.Repeat("0", exp))
	case -exp >= len(digits):
		sb.WriteString("0.")
		sb.WriteString(strings.Repeat("0", -exp-len(digits)))
		sb.WriteString(digits)
	default:
		point := len(digits) + exp
		sb.WriteString(digits[:point])
		sb.WriteByte('.')
		sb.WriteString(digits[point:])
	}
	return sb.String(), nil
}

// NumberDigits returns the significant digits of a valid number, which
// determine its stored size.
func NumberDigits(s string) int {
	_, digits, _, err := parseDecimal(s)
	if err != nil {
		return len(s)
	}
	return len(digits)
}

// parseDecimal splits s into sign, significant digits (no leading or
// trailing zeros) and the power of ten of the last digit.
func parseDecimal(s string) (neg bool, digits string, exp int, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return false, "", 0, errNotNumber
	}
	switch s[0] {
	case '-':
		neg = true
		s = s[1:]
	case '+':
		s = s[1:]
	}
	mant, expPart := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, expPart = s[:i], s[i+1:]
		if expPart == "" {
			return false, "", 0, fmt.Errorf("%s: %w", quoteValue(s), errNotNumber)
		}
		e, perr := strconv.Atoi(expPart)
		if perr != nil {
			return false, "", 0, fmt.Errorf("%s: %w", quoteValue(s), errNotNumber)
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" && frac == "" {
		return false, "", 0, fmt.Errorf("%s: %w", quoteValue(s), errNotNumber)
	}
	if strings.Trim(intPart, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return false, "", 0, fmt.Errorf("%s: %w", quoteValue(s), errNotNumber)
	}
	all := intPart + frac
	exp -= len(frac)
	all = strings.TrimLeft(all, "0")
	trimmed := strings.TrimRight(all, "0")
	exp += len(all) - len(trimmed)
	if trimmed == "" {
		return false, "", 0, nil
	}
	return neg, trimmed, exp, nil
}
