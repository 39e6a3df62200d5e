package mapping

import (
	"fmt"
	"strconv"
)

// maxQuoted is how many characters of a row's value an error quotes:
// enough to recognise the value, not a whole document or blob, and not
// all of a secret a column may hold. An error about a bad row goes to
// stderr, the report, the reject file's reason and logs.
const maxQuoted = 64

// quoteValue quotes a row's value for an error message as %q does, cut to
// maxQuoted characters with its size after: "abc…"…(1234 bytes).
func quoteValue(s string) string {
	head, cut := cutValue(s)
	if !cut {
		return strconv.Quote(s)
	}
	return strconv.Quote(head) + fmt.Sprintf("…(%d bytes)", len(s))
}

// boundValue is quoteValue without the quotes, for a value shown as it
// is (a number).
func boundValue(s string) string {
	head, cut := cutValue(s)
	if !cut {
		return s
	}
	return head + fmt.Sprintf("…(%d bytes)", len(s))
}

// cutValue returns the first maxQuoted characters of s, and whether that
// is less than s. A byte that is not UTF-8 counts as one character.
func cutValue(s string) (string, bool) {
	n := 0
	for i := range s {
		if n == maxQuoted {
			return s[:i], true
		}
		n++
	}
	return s, false
}
