package mapping

import (
	"fmt"
	"strconv"
	"strings"
)

// BoundSQL is a pattern's SQL with its :name parameters replaced by the
// driver's placeholders ($1.. on PostgreSQL, ? on MySQL). Values are bound,
// never spliced into the text.
type BoundSQL struct {
	// Text is the SQL as sent, with placeholders.
	Text string
	// Args names, per placeholder in order, the parameter bound to it: on
	// PostgreSQL one per distinct name ($1 is Args[0] wherever it occurs),
	// on MySQL one per occurrence.
	Args []string
	// Names are the distinct parameter names, in order of first use.
	Names []string
}

// BindParams finds the :name parameters of sql and replaces them with the
// placeholders of driver ("postgres" or "mysql"). It skips what is not a
// parameter: PostgreSQL's ::casts, MySQL's := assignments, and a colon
// inside a string literal, a quoted identifier, a dollar-quoted string or
// a comment. A name is a letter or underscore followed by letters, digits
// and underscores.
func BindParams(sql, driver string) (BoundSQL, error) { return bindParams(sql, driver, false) }

// NullParams is sql with each :name parameter written NULL: the text to
// describe the columns of, on a server that cannot describe a statement
// with placeholders (MySQL, where DescribeQuery wraps the text).
func NullParams(sql, driver string) (string, error) {
	b, err := bindParams(sql, driver, true)
	return b.Text, err
}

func bindParams(sql, driver string, null bool) (BoundSQL, error) {
	var b BoundSQL
	var out strings.Builder
	pos := map[string]int{}
	n := len(sql)
	for i := 0; i < n; {
		c := sql[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			end, err := quotedEnd(sql, i, driver)
			if err != nil {
				return BoundSQL{}, err
			}
			out.WriteString(sql[i:end])
			i = end
		case c == '-' && i+1 < n && sql[i+1] == '-', c == '#' && driver == "mysql":
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				end = n - i
			}
			out.WriteString(sql[i : i+end])
			i += end
		case c == '/' && i+1 < n && sql[i+1] == '*':
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return BoundSQL{}, fmt.Errorf("unterminated /* comment at offset %d", i)
			}
			out.WriteString(sql[i : i+2+end+2])
			i += 2 + end + 2
		case c == '$' && driver != "mysql" && dollarTag(sql, i) != "":
			tag := dollarTag(sql, i)
			end := strings.Index(sql[i+len(tag):], tag)
			if end < 0 {
				return BoundSQL{}, fmt.Errorf("unterminated %s-quoted string at offset %d", tag, i)
			}
			stop := i + len(tag) + end + len(tag)
			out.WriteString(sql[i:stop])
			i = stop
		case c == ':' && i+1 < n && (sql[i+1] == ':' || sql[i+1] == '='):
			// ::cast (PostgreSQL) or := (MySQL assignment)
			out.WriteString(sql[i : i+2])
			i += 2
		case c == ':' && i+1 < n && isNameStart(sql[i+1]) && (i == 0 || !isNameChar(sql[i-1])):
			j := i + 1
			for j < n && isNameChar(sql[j]) {
				j++
			}
			name := sql[i+1 : j]
			if _, seen := pos[name]; !seen {
				b.Names = append(b.Names, name)
			}
			if null {
				pos[name] = 0
				out.WriteString("NULL")
			} else if driver == "mysql" {
				out.WriteByte('?')
				b.Args = append(b.Args, name)
				pos[name] = len(b.Args)
			} else {
				p, seen := pos[name]
				if !seen {
					b.Args = append(b.Args, name)
					p = len(b.Args)
					pos[name] = p
				}
				out.WriteString("$" + strconv.Itoa(p))
			}
			i = j
		default:
			out.WriteByte(c)
			i++
		}
	}
	b.Text = out.String()
	return b, nil
}

// quotedEnd returns the offset just past the string literal or quoted
// identifier that starts at i. A doubled quote stands for itself; MySQL
// also escapes with a backslash inside '…' and "…".
func quotedEnd(sql string, i int, driver string) (int, error) {
	q := sql[i]
	for j := i + 1; j < len(sql); j++ {
		switch {
		case sql[j] == '\\' && driver == "mysql" && q != '`':
			j++
		case sql[j] == q && j+1 < len(sql) && sql[j+1] == q:
			j++
		case sql[j] == q:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated %c at offset %d", q, i)
}

// dollarTag returns the $tag$ that opens a PostgreSQL dollar-quoted string
// at i, or "" ($1 and a lone $ are not one).
func dollarTag(sql string, i int) string {
	for j := i + 1; j < len(sql); j++ {
		switch c := sql[j]; {
		case c == '$':
			return sql[i : j+1]
		case j == i+1 && !isNameStart(c):
			return ""
		case !isNameChar(c):
			return ""
		}
	}
	return ""
}

func isNameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isNameChar(c byte) bool  { return isNameStart(c) || '0' <= c && c <= '9' }
