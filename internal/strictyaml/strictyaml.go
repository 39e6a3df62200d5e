// Package strictyaml decodes a YAML document into a Go type strictly:
// every key the type does not have is reported, with a suggestion when it
// looks like a typo of one it has, and a value of the wrong type is
// blamed on its key path and line, even when several keys share a line
// ({read: x, write: 5}) or yaml gives no line at all. A name given twice
// in an ordered mapping is an error, and merge keys (<<) are checked as
// the keys they bring in. mapping's file format is its user; it knows
// nothing of mappings.
package strictyaml

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a problem located in the document: the key path
// (entities.server.key), the line, and what is wrong.
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Ordered is a type decoded from a YAML mapping whose entries keep their
// order (a list of entries rather than a Go map): the checker walks each
// entry's value as ValueType, and refuses a name given twice.
type Ordered interface{ OrderedValueType() reflect.Type }

// Decode decodes root, a YAML mapping, into out (a pointer), and returns
// every problem: unknown keys, values of the wrong type at their keys,
// keys that are not names, names given twice, merge keys where they
// cannot add entries. A value yaml cannot resolve at all (`!!int x`),
// which stops decoding, is the one problem returned. what names the
// document in a message that has no key to name ("mapping file").
func Decode(root *yaml.Node, out any, what string) []*Error {
	var errs []*Error
	kc := &keyChecker{errs: &errs, seen: map[walked]bool{}, what: what}
	kc.check(root, reflect.TypeOf(out).Elem(), "", -1)
	if err := root.Decode(out); err != nil {
		te, ok := err.(*yaml.TypeError)
		if !ok {
			return []*Error{kc.locateFailure(err)}
		}
		perLine := map[int]int{}
		for _, msg := range te.Errors {
			errs = append(errs, kc.typeError(msg, perLine))
		}
	}
	return errs
}

// Suggest returns the entry of known closest to s (ignoring case), when it
// is close enough to be a likely typo, else "".
func Suggest(s string, known []string) string { return suggest(s, known) }

// keyChecker walks the document next to the Go type it decodes into. It
// reports every key the type does not have, with a suggestion, and records
// each value with its key path and type, so that a decoding error, which
// yaml locates by line only, is blamed on its key even when several keys
// share a line ({read: x, write: 5}).
type keyChecker struct {
	what   string
	errs   *[]*Error
	values []typedValue
	// seen stops a value reached again through an alias from being walked
	// again: nested aliases can expand a small file exponentially.
	seen map[walked]bool
}

type typedValue struct {
	path    string
	keyLine int // 0 for the root and list elements
	n       *yaml.Node
	t       reflect.Type
	parent  int // index in values, -1 for the root
	// badMerge marks the value of a merge key that is not a mapping.
	badMerge bool
}

type walked struct {
	n *yaml.Node
	t reflect.Type
}

func (kc *keyChecker) check(n *yaml.Node, t reflect.Type, path string, keyLine int) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if kc.seen[walked{n, t}] {
		return
	}
	kc.seen[walked{n, t}] = true
	kc.record(typedValue{path: path, keyLine: keyLine, n: n, t: t})
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if om, ok := reflect.Zero(t).Interface().(Ordered); ok {
		if n.Kind != yaml.MappingNode {
			return // the decoder reports the type mismatch
		}
		vt := om.OrderedValueType()
		lines := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if !kc.plainKey(k, path) {
				continue
			}
			if isMerge(k) {
				*kc.errs = append(*kc.errs, &Error{Path: join(path, k.Value), Line: k.Line, Msg: "a merge key (<<) cannot add entries here; write each name out"})
				continue
			}
			// OrderedMap keeps every entry, so a name given twice would
			// silently make two entities (or indexes) of one name.
			if prev, dup := lines[k.Value]; dup {
				*kc.errs = append(*kc.errs, &Error{Path: join(path, k.Value), Line: k.Line, Msg: fmt.Sprintf("%q is already defined at line %d", k.Value, prev)})
				continue
			}
			lines[k.Value] = k.Line
			kc.check(n.Content[i+1], vt, join(path, k.Value), k.Line)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // the decoder reports the type mismatch
		}
		fields := map[string]reflect.Type{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = f.Type
			names = append(names, tag)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if !kc.plainKey(k, path) {
				continue
			}
			if isMerge(k) {
				// "<<: *defaults" brings in the keys of the mapping (or
				// list of mappings) it names, which the decoder merges.
				kc.merge(n.Content[i+1], t, join(path, k.Value), k.Line)
				continue
			}
			ft, ok := fields[k.Value]
			if !ok {
				msg := fmt.Sprintf("unknown key %q", k.Value)
				if s := suggest(k.Value, names); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				} else {
					sort.Strings(names)
					msg += " (known keys: " + strings.Join(names, ", ") + ")"
				}
				*kc.errs = append(*kc.errs, &Error{Path: join(path, k.Value), Line: k.Line, Msg: msg})
				continue
			}
			kc.check(n.Content[i+1], ft, join(path, k.Value), k.Line)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			kc.check(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), 0)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if kc.plainKey(n.Content[i], path) {
				kc.check(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), n.Content[i].Line)
			}
		}
	}
}

// record adds a value, finding its parent among the values before it.
func (kc *keyChecker) record(v typedValue) {
	v.parent = len(kc.values) - 1
	for v.parent >= 0 && !isWithin(v.path, kc.values[v.parent].path) {
		v.parent = kc.values[v.parent].parent
	}
	kc.values = append(kc.values, v)
}

// IsMerge tells a YAML merge key (<<) the way the decoder does.
func IsMerge(k *yaml.Node) bool { return isMerge(k) }

func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.Tag == "!!merge")
}

// merge checks the keys a merge key brings in against t.
func (kc *keyChecker) merge(v *yaml.Node, t reflect.Type, path string, keyLine int) {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	one := func(m *yaml.Node, path string) {
		if m.Kind == yaml.AliasNode && m.Alias != nil {
			m = m.Alias
		}
		if m.Kind != yaml.MappingNode {
			// Alone it may decode (a null does), yet it cannot be merged.
			kc.record(typedValue{path: path, keyLine: keyLine, n: m, t: t, badMerge: true})
			return
		}
		kc.check(m, t, path, keyLine)
	}
	if v.Kind != yaml.SequenceNode {
		one(v, path)
		return
	}
	for i, c := range v.Content {
		one(c, fmt.Sprintf("%s[%d]", path, i))
	}
}

// plainKey reports a key written as a list or a mapping ("? [a]: b"), or
// an empty key at the top, which have no name to put in a key path.
func (kc *keyChecker) plainKey(k *yaml.Node, path string) bool {
	scalar := k.Kind == yaml.ScalarNode || k.Kind == yaml.AliasNode
	if scalar && (k.Value != "" || path != "") {
		return true
	}
	msg := "a key must be a name, not a list or a mapping"
	if scalar {
		msg = "a key must be a name, not empty"
	}
	if path == "" {
		msg = fmt.Sprintf("line %d: %s", k.Line, msg)
	}
	*kc.errs = append(*kc.errs, &Error{Path: path, Line: k.Line, Msg: msg})
	return false
}

// isWithin reports whether path is parent or below it.
func isWithin(path, parent string) bool {
	if parent == "" || path == parent {
		return true
	}
	return strings.HasPrefix(path, parent) && (path[len(parent)] == '.' || path[len(parent)] == '[')
}

// Join is the key path of key under path, as errors name it.
func Join(path, key string) string { return join(path, key) }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var lineRe = regexp.MustCompile(`^line (\d+): (.*)$`)

// typeError turns one of yaml's "line 12: cannot unmarshal …" messages
// into an Error at the key of the value that does not decode. perLine
// counts the messages already placed on each line, so that two bad values
// on one line are blamed on one each.
func (kc *keyChecker) typeError(msg string, perLine map[int]int) *Error {
	m := lineRe.FindStringSubmatch(msg)
	if m == nil {
		return kc.locateFailure(errors.New(msg))
	}
	line, _ := strconv.Atoi(m[1])
	text := m[2]
	// "cannot unmarshal !!str `abc` into int" reads better as a type hint.
	text = strings.Replace(text, "cannot unmarshal !!str", "expected a different type, got string", 1)
	text = strings.Replace(text, "cannot unmarshal !!map into", "expected a scalar or list, got a mapping; Go type", 1)
	text = strings.Replace(text, "cannot unmarshal !!seq into", "expected a scalar or mapping, got a list; Go type", 1)

	// The values written on the line that fail to decode, innermost only.
	var failing []int
	for i, v := range kc.values {
		if v.n.Line == line && v.path != "" && v.fails() {
			failing = append(failing, i)
		}
	}
	var leaves []int
	for _, i := range failing {
		inner := false
		for _, j := range failing {
			inner = inner || (j != i && isWithin(kc.values[j].path, kc.values[i].path))
		}
		if !inner {
			leaves = append(leaves, i)
		}
	}
	if len(leaves) > 0 {
		v := kc.values[leaves[min(perLine[line], len(leaves)-1)]]
		perLine[line]++
		return &Error{Path: v.path, Line: line, Msg: text}
	}
	// Nothing on the line fails alone (a key given twice): the key written
	// on that line, when it is the only key there.
	path := ""
	if kc.keysOn(line) == 1 {
		for _, v := range kc.values {
			if v.keyLine == line {
				path = v.path
			}
		}
	}
	if path == "" {
		return &Error{Line: line, Msg: fmt.Sprintf("line %d: %s", line, text)}
	}
	return &Error{Path: path, Line: line, Msg: text}
}

// keysOn counts the keys written on a line, anywhere in the document.
func (kc *keyChecker) keysOn(line int) int {
	n := 0
	var walk func(*yaml.Node)
	walk = func(nd *yaml.Node) {
		for i, c := range nd.Content {
			if nd.Kind == yaml.MappingNode && i%2 == 0 && c.Line == line {
				n++
			}
			walk(c)
		}
	}
	walk(kc.values[0].n)
	return n
}

// locateFailure places an error that yaml gives without a line at the
// innermost value that fails to decode on its own.
func (kc *keyChecker) locateFailure(err error) *Error {
	failed := make([]bool, len(kc.values))
	at := -1
	for i, v := range kc.values {
		if (v.parent < 0 || failed[v.parent]) && v.fails() {
			failed[i] = true
			if v.path != "" {
				at = i
			}
		}
	}
	text := strings.TrimPrefix(err.Error(), "yaml: ")
	if at < 0 {
		return &Error{Msg: kc.what + " cannot be decoded: " + text}
	}
	v := kc.values[at]
	return &Error{Path: v.path, Line: v.n.Line, Msg: text}
}

func (v typedValue) fails() bool {
	return v.badMerge || v.n.Decode(reflect.New(v.t).Interface()) != nil
}

// suggest returns the known name closest to s when it is close enough to
// be a typo.
func suggest(s string, known []string) string {
	best, bestD := "", 1<<30
	for _, k := range known {
		if d := levenshtein(strings.ToLower(s), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if bestD <= 2 || (bestD <= 3 && len(s) > 6) {
		return best
	}
	return ""
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
