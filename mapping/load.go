package mapping

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The mapping file is decoded with yaml directly rather than through viper:
// viper folds every key to lower case, which would corrupt attribute names
// (PortfolioName) and index names (GSI1) that DynamoDB treats as
// case-sensitive. Flags and environment overrides still go through viper in
// cmd/dynafold.

// Load reads and decodes a mapping file. Syntax errors, unknown keys and
// values of the wrong type are reported together as Errors naming the key
// path. It does not validate meaning; Compile does.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading mapping file: %w", err)
	}
	return Parse(data)
}

// Parse decodes a mapping file's contents.
func Parse(data []byte) (*Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, Errors{{Msg: "mapping file is not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, Errors{{Msg: "mapping file is empty"}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, Errors{{Line: root.Line, Msg: "mapping file must be a YAML mapping (version:, source:, target:, entities:)"}}
	}
	var errs Errors
	checkKeys(root, reflect.TypeOf(Config{}), "", &errs)
	var cfg Config
	if err := root.Decode(&cfg); err != nil {
		lines := lineIndex(root)
		te, ok := err.(*yaml.TypeError)
		if !ok {
			return nil, Errors{{Msg: err.Error()}}
		}
		for _, msg := range te.Errors {
			errs = append(errs, typeError(msg, lines))
		}
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// UnmarshalYAML accepts the short form (a column or a template) and the
// long form (a mapping).
func (a *AttributeSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!null" {
			return &yaml.TypeError{Errors: []string{lineMsg(n, "attribute needs a column, a template or a mapping")}}
		}
		*a = AttributeSpec{shorthand: true}
		if strings.Contains(n.Value, "${") {
			a.Template = n.Value
		} else {
			a.From = n.Value
		}
		return nil
	}
	type plain AttributeSpec
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*a = AttributeSpec(p)
	return nil
}

func lineMsg(n *yaml.Node, msg string) string {
	return fmt.Sprintf("line %d: %s", n.Line, msg)
}

// checkKeys walks the document next to the Go type it decodes into and
// reports every key the type does not have, with a suggestion.
func checkKeys(n *yaml.Node, t reflect.Type, path string, errs *Errors) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if om, ok := reflect.Zero(t).Interface().(orderedMapper); ok && n.Kind == yaml.MappingNode {
		vt := om.orderedValueType()
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkKeys(n.Content[i+1], vt, join(path, n.Content[i].Value), errs)
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
			ft, ok := fields[k.Value]
			if !ok {
				msg := fmt.Sprintf("unknown key %q", k.Value)
				if s := suggest(k.Value, names); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				} else {
					sort.Strings(names)
					msg += " (known keys: " + strings.Join(names, ", ") + ")"
				}
				*errs = append(*errs, &Error{Path: join(path, k.Value), Line: k.Line, Msg: msg})
				continue
			}
			checkKeys(n.Content[i+1], ft, join(path, k.Value), errs)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), errs)
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// lineIndex maps each line to the key path of the first value on it, so
// that yaml's "line 12: cannot unmarshal" becomes a key path.
func lineIndex(root *yaml.Node) map[int]string {
	out := map[int]string{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if _, ok := out[n.Line]; !ok {
			out[n.Line] = path
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := join(path, n.Content[i].Value)
				out[n.Content[i].Line] = p
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(root, "")
	return out
}

var lineRe = regexp.MustCompile(`^line (\d+): (.*)$`)

func typeError(msg string, lines map[int]string) *Error {
	m := lineRe.FindStringSubmatch(msg)
	if m == nil {
		return &Error{Msg: msg}
	}
	line, _ := strconv.Atoi(m[1])
	text := m[2]
	// "cannot unmarshal !!str `abc` into int" reads better as a type hint.
	text = strings.Replace(text, "cannot unmarshal !!str", "expected a different type, got string", 1)
	text = strings.Replace(text, "cannot unmarshal !!map into", "expected a scalar or list, got a mapping; Go type", 1)
	text = strings.Replace(text, "cannot unmarshal !!seq into", "expected a scalar or mapping, got a list; Go type", 1)
	return &Error{Path: lines[line], Line: line, Msg: text}
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
