package mapping

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dynafold/dynafold/internal/strictyaml"
	"github.com/dynafold/dynafold/value"
)

// Error is a problem in the mapping file, located by its key path, e.g.
// `entities.server.key.sk: unknown column "hostnme" in table servers`:
// the strict decoder's located error, which the compiler's checks use
// too.
type Error = strictyaml.Error

// Errors is every problem found in one mapping file. The CLI exits with
// code 2 when it sees one.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// add records a problem at path.
func (es *Errors) add(path, format string, args ...any) {
	*es = append(*es, &Error{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// err returns nil when there are no problems, sorted by file line then
// path. A problem found more than once (an entity's template inherited by
// each of its items:) is reported once.
func (es Errors) err() error {
	if len(es) == 0 {
		return nil
	}
	seen := map[Error]bool{}
	uniq := es[:0]
	for _, e := range es {
		if !seen[*e] {
			seen[*e] = true
			uniq = append(uniq, e)
		}
	}
	es = uniq
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line && es[i].Line != 0 && es[j].Line != 0 {
			return es[i].Line < es[j].Line
		}
		return false
	})
	return es
}

// RowError is a source row that cannot become a valid item. It names the
// entity, the row's primary key, the attribute (or key) and the reason, and
// carries the row's values for the reject file.
type RowError struct {
	Entity    string
	SourceKey []KeyPart
	Attribute string
	Reason    string
	// Row holds the row's values by column, for reject files.
	Row map[string]value.Value
}

// KeyPart is one primary-key column of a source row.
type KeyPart struct {
	Column string      `json:"column"`
	Value  value.Value `json:"value"`
}

// KeyString renders the source key as `id=7` or `user_id=3, item_id=9`.
func (e *RowError) KeyString() string { return keyString(e.SourceKey) }

// KeyStringOf renders any source key the same way.
func KeyStringOf(parts []KeyPart) string { return keyString(parts) }

func keyString(parts []KeyPart) string {
	var sb strings.Builder
	for i, p := range parts {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(p.Column)
		sb.WriteByte('=')
		if p.Value.Kind == value.String {
			sb.WriteString(quoteValue(p.Value.S))
		} else {
			sb.WriteString(boundValue(p.Value.Text()))
		}
	}
	return sb.String()
}

func (e *RowError) Error() string {
	where := e.Attribute
	if where != "" {
		where = " " + where
	}
	return fmt.Sprintf("entity %s, row %s:%s %s", e.Entity, e.KeyString(), where, e.Reason)
}
