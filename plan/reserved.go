package plan

import (
	_ "embed"
	"strings"
	"sync"
)

//go:embed reserved_words.txt
var reservedWordsText string

// reservedWords is built once from the embedded list; it is read-only
// after that.
var reservedWords = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, line := range strings.Split(reservedWordsText, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			m[line] = true
		}
	}
	return m
})

// isReserved reports whether name is a DynamoDB reserved word, which an
// expression must refer to through an expression attribute name (#n).
func isReserved(name string) bool { return reservedWords()[strings.ToUpper(name)] }
