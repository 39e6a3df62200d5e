package mapping

// Fuzz targets for what parses: templates and mapping files. Their seed
// corpus (the f.Add calls, the broken-mapping corpus and the example
// configs) runs as ordinary tests under `go test`; to fuzz for real:
//
//	go test -run='^$' -fuzz='^FuzzTemplate$'    -fuzztime=2m ./mapping/
//	go test -run='^$' -fuzz='^FuzzLoad$'        -fuzztime=2m ./mapping/
//	go test -run='^$' -fuzz='^FuzzLoadMutated$' -fuzztime=2m ./mapping/
//
// A crash is saved under testdata/fuzz/<Target>/; add it to the target's
// f.Add seeds once fixed so that it stays a regression test.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/dynafold/dynafold/internal/strictyaml"
	"github.com/dynafold/dynafold/value"
)

// FuzzTemplate parses any text as a template. It either fails with a
// message, or it parses and renders against a row of arbitrary values
// without panicking, the two renderers (Render and the build path's
// appendTo) agreeing byte for byte.
func FuzzTemplate(f *testing.F) {
	for _, src := range []string{
		"", "PORTFOLIO", "${id}", "SERVER#${id|lower}", "${server.portfolio_id}#${server_id}",
		"REPORT#${reported_at|iso}", "CONTESTANT#${contestant_id}#${id|shard:10}", "ORDER#${n|pad:8}",
		"${ts|epoch}", "${ts|date}", "${a|upper|lower}", "${a|pad:3|shard:7}", "price is $$${p}",
		"$$", "$", "${", "${}", "}", "${id", "A$B", "${a.b.c}", "${.id}", "${id.}", "${id|}", "${|lower}",
		"${id|pad}", "${id|pad:0}", "${id|pad:65}", "${id|shard:1048577}", "${id|shard:-1}", "${id|lower:2}",
		"${ id | lower }", "${na me}", "${a$b}", "${a{b}", "${x}${y}${z}", "Zoë#${uni|upper}", "\xff${a|lower}",
		"${a|pad:+3}", "${a|shard:0x10}", "${a|pad:64}",
	} {
		f.Add(src, "42", int64(7), uint64(0x5555))
	}
	f.Add("${a|pad:4}", "-12.50", int64(-3), uint64(0x2222))
	f.Add("${a|pad:4}", "+.", int64(0), uint64(0x2222))
	f.Add("${a|lower}#${b|upper}", "İSTANBUL ǅ \xc3", int64(1), uint64(0x55))
	f.Add("${t|iso}${t|epoch}${t|date}", "x", int64(-62135596801), uint64(0x888))
	f.Add("${t|iso}", "x", int64(1<<62), uint64(0x8))
	f.Add("${l|lower}#${l}", "a", int64(5), uint64(0xaa))
	f.Add("${j|shard:3}${b}", "{\"a\":1}", int64(5), uint64(0x69))

	f.Fuzz(func(t *testing.T, src, text string, n int64, kinds uint64) {
		tmpl, err := ParseTemplate(src)
		if err != nil {
			if tmpl != nil || err.Error() == "" {
				t.Fatalf("ParseTemplate(%q): error %q with template %v", src, err, tmpl)
			}
			return
		}
		if tmpl.String() != src {
			t.Fatalf("String() = %q, want the source %q", tmpl.String(), src)
		}
		exprs := tmpl.Exprs()
		if len(exprs) > strings.Count(src, "${") {
			t.Fatalf("%q: %d expressions from %d \"${\"", src, len(exprs), strings.Count(src, "${"))
		}
		if lit, ok := tmpl.Literal(); ok {
			if len(exprs) != 0 {
				t.Fatalf("%q: a literal with expressions", src)
			}
			// Escaping the literal's dollars gives a template of that literal.
			again, err := ParseTemplate(strings.ReplaceAll(lit, "$", "$$"))
			if err != nil {
				t.Fatalf("literal %q does not round-trip: %v", lit, err)
			}
			if lit2, ok := again.Literal(); !ok || lit2 != lit {
				t.Fatalf("literal %q round-trips to %q", lit, lit2)
			}
		}
		if _, single := tmpl.Single(); single && len(exprs) != 1 {
			t.Fatalf("%q: Single with %d expressions", src, len(exprs))
		}

		row := make(value.Row, len(exprs))
		for i, e := range exprs {
			e.col = i
			row[i] = fuzzValue(kinds>>(4*(i%16)), text, n+int64(i))
		}
		s, ok, err := tmpl.Render(row)
		b, ok2, err2 := tmpl.appendTo([]byte("prefix"), row)
		if (err == nil) != (err2 == nil) || ok != ok2 {
			t.Fatalf("%q on %v: Render gives (%q, %v, %v), appendTo (%q, %v, %v)", src, row, s, ok, err, b, ok2, err2)
		}
		switch {
		case err != nil:
			if err.Error() != err2.Error() || err.Error() == "" {
				t.Fatalf("%q on %v: Render error %q, appendTo error %q", src, row, err, err2)
			}
		case ok:
			if got := string(b[len("prefix"):]); got != s {
				t.Fatalf("%q on %v: Render gives %q, appendTo %q", src, row, s, got)
			}
			if !strings.HasPrefix(s, tmpl.Prefix()) {
				t.Fatalf("%q: rendered %q does not start with the prefix %q", src, s, tmpl.Prefix())
			}
			if lit, isLit := tmpl.Literal(); isLit && s != lit {
				t.Fatalf("literal %q rendered as %q", lit, s)
			}
		}
	})
}

// fuzzValue makes a value of any kind from the fuzzer's inputs.
func fuzzValue(sel uint64, text string, n int64) value.Value {
	switch value.Kind(sel % 16) {
	case value.Null:
		return value.NullValue()
	case value.Int:
		return value.IntValue(n)
	case value.Decimal:
		return value.DecimalValue(text)
	case value.Float:
		return value.FloatValue(float64(n) / 3)
	case value.Bool:
		return value.BoolValue(n&1 == 1)
	case value.String:
		return value.StringValue(text)
	case value.Bytes:
		return value.BytesValue([]byte(text))
	case value.Date:
		return value.DateValue(time.Unix(n, 0))
	case value.Timestamp:
		return value.TimestampValue(time.Unix(n, n))
	case value.JSON:
		return value.JSONValue(text)
	case value.List:
		return value.ListValue([]value.Value{value.StringValue(text), value.IntValue(n), value.NullValue()})
	}
	return value.StringValue(strconv.FormatInt(n, 10))
}

// FuzzLoad loads arbitrary bytes as a mapping file through Parse and the
// static Compile (no database). It must not panic; an invalid file must
// fail with errors that each name their key (see checkNamesKey); a file
// that compiles must build items from any row without panicking.
func FuzzLoad(f *testing.F) {
	for _, p := range seedFiles(f) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "#", "---", "--- \n...", "~", "[]", "- a", "a", "{", "\x01", "\xff", "version: 1\n---\nversion: 2",
		"{version: abc, entities: {}}",
		"version: 1\ntarget: {table: things, capacity: {read: x, write: 5}}\n",
		"version: 1\ntarget: {table: things, capacity: {read: 5, write: x}}\n",
		"version: [1]", "version: 1.5", "version: !!binary AAAA", "version: {a: 1}",
		"? [a]\n: b\n", "entities: {? [a] : {from: x}}\n", "entities: {? {a: 1} : {from: x}}\n",
		// Found by FuzzLoad: an empty key, a dotted key, a key given twice in
		// a flow mapping, merge keys, CR line breaks.
		"&00000: 00000", "\"\": x", "target: {\"\": x}", "0 .000: x", "target: \n  !000 {pk,pk}", "{c,c,entities}",
		"entities:\n 0: \n    key: \n    key: {0}", "<<:", "<<: 1", "<<: [{version: 1}, ~]", "<<: [{version: 1}, {sorce: 1}]", "\r?",
		"a: &a [*a]", "x: &x {a: *x}", "vars: &v {a: *v}",
		"version: 1\nversion: 1\n", "entities: {a: {from: x}, a: {from: y}}\n",
		"entities: {a: {attributes: {X: }}}\n", "entities: {a: {attributes: {X: [1]}}}\n",
		"entities: {a: {attributes: {X: {from: [1]}}}}\n", "entities: {a: ~}\n", "entities: [a]\n",
		"entities:\n  x: !!binary AAAA\n", "entities: {x: {primary_key: {a: 1}, key: [1]}}\n",
		"access_patterns: [~, {query: ~}, {query: {sk_between: [a]}}]\n", "access_patterns: {a: 1}\n",
		"defaults: {on_error: [x]}\n", "target: {indexes: {GSI1: ~, GSI2: [x]}}\n",
		"source: !!str\n", "source: !!map\n", "source: !!seq\n", "source: !!int x\n", "source: !!timestamp x\n",
		// primary_key listing a column twice made Compile index past the
		// row in nest.go (index out of range).
		"version: 1\nsource: {driver: mysql}\ntarget: {table: tbl, key: {pk: PK}}\nentities:\n  e:\n    from: t\n    primary_key: [id, id]\n    key: {pk: \"${id}\"}\n    nest: {N: {from: c, attributes: {a: b}}}\n",
		"version: 1\nsource: {driver: mysql}\ntarget: {table: tbl, key: {pk: PK, sk: SK}}\nentities:\n  e:\n    from: t\n    key: {pk: \"${id}\"}\n    items: {a: {key: {pk: \"${x\", sk: A}}, b: {key: {pk: B, sk: \"$\"}}}\n",
		"version: 1\nsource: {driver: mysql}\ntarget: {table: tbl, key: {pk: PK}}\nentities:\n  e:\n    query: select 1\n    primary_key: [a]\n    where: \"x = ${var.v\"\n    key: {pk: \"${a}\"}\n    ttl: {from: a, offset: 9999999999999999d}\n",
	} {
		f.Add([]byte(s))
	}
	// Entities that compiled to nothing (a null one, found by
	// FuzzLoadMutated; an empty items:) and templates every item replaced,
	// which were never parsed.
	const head = "version: 1\nsource: {driver: mysql}\ntarget: {table: tbl, key: {pk: PK, sk: SK}, indexes: {GSI1: {pk: G}}}\n"
	for _, s := range []string{
		"entities: {e: ~}\n",
		"entities: {e: {from: t, key: {pk: \"${id}\"}, items: {}}}\n",
		"entities: {e: {from: t, key: {pk: \"${id\"}, index: {GSI1: {pk: \"${x\"}}, items: {a: {key: {pk: A, sk: A}, index: {GSI1: {pk: \"${y}\"}}}}}}\n",
		"entities: {e: {from: t, key: {pk: P}, index: {GSI1: {pk: \"${x\"}}, items: {a: {key: {sk: A}}, b: {key: {sk: B}}}}}\n",
	} {
		f.Add([]byte(head + s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		loadAndCheck(t, data)
	})
}

// FuzzLoadMutated changes one node of a valid example mapping (configs/)
// and loads the result: it reaches deep into Compile, where random bytes
// rarely get. On top of FuzzLoad's checks, a malformed template written
// where a template belongs must be reported at that key.
func FuzzLoadMutated(f *testing.F) {
	bases := mutationBases(f)
	for i := range bases {
		for _, m := range []struct {
			at   uint16
			op   uint8
			repl string
		}{
			{7, opSetString, "${id"}, {11, opSetString, "X#${id|nope}"}, {13, opSetYAML, "[1, 2]"},
			{17, opDelete, ""}, {19, opRename, "keys"}, {23, opDuplicate, "copy"}, {29, opSetYAML, "{from: id, type: Q}"},
			{31, opSetString, "${a|pad:0}"}, {37, opSetYAML, "~"}, {41, opSetString, "$"}, {43, opSetYAML, "!!binary AAAA"},
		} {
			f.Add(uint8(i), m.at, m.op, m.repl)
		}
	}
	f.Fuzz(func(t *testing.T, base uint8, at uint16, op uint8, repl string) {
		doc := bases[int(base)%len(bases)].parse(t)
		sites := mutationSites(doc.Content[0], "")
		s := sites[int(at)%len(sites)]
		if !s.apply(op%opCount, repl) {
			return
		}
		data, err := yaml.Marshal(doc)
		if err != nil {
			return // a node the encoder refuses: not a mapping file
		}
		err = loadAndCheck(t, data)
		if op%opCount == opSetString && isTemplateSite(s.path, repl) {
			if _, perr := ParseTemplate(repl); perr != nil {
				want := s.path + ": bad template"
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("template %q at %s fails to parse (%v), but loading gives %v, not %q\n%s", repl, s.path, perr, err, want, data)
				}
			}
		}
	})
}

// loadAndCheck runs the loader as `dynafold validate` does and checks its
// contract; it returns the error, nil when the mapping compiles.
func loadAndCheck(t *testing.T, data []byte) error {
	cfg, err := Parse(data)
	if err != nil {
		if cfg != nil {
			t.Fatalf("Parse returned a config with the error %v", err)
		}
		checkNamesKey(t, data, err)
		return err
	}
	for _, opts := range []Options{{}, {RequireVars: true, Vars: map[string]string{"tenant": "7"}}} {
		plan, cerr := Compile(cfg, nil, opts)
		if cerr != nil {
			if plan != nil {
				t.Fatalf("Compile returned a plan with the error %v", cerr)
			}
			checkNamesKey(t, data, cerr)
			err = cerr
			continue
		}
		buildAny(t, plan, data)
	}
	return err
}

// buildAny builds every entity's items from rows of text and of NULLs: a
// compiled plan must turn any row into items or a *RowError.
func buildAny(t *testing.T, plan *Plan, data []byte) {
	if len(plan.Entities) == 0 {
		t.Fatalf("a compiled mapping without entities\n%s", data)
	}
	for _, e := range plan.Entities {
		if len(e.Items) == 0 {
			t.Fatalf("entity %s compiles to no items: its rows would be read and nothing written\n%s", e.Name, data)
		}
		for _, fill := range []value.Value{value.StringValue(string(data[:min(len(data), 16)])), value.StringValue("7"), value.NullValue()} {
			row := make(value.Row, len(e.ColumnNames()))
			for i := range row {
				row[i] = fill
			}
			nested := make([][]value.Row, len(e.Nests()))
			for i, np := range e.Nests() {
				child := append(value.Row{}, row[:np.ParentKeyLen]...)
				for len(child) < len(np.ChildColumnNames()) {
					child = append(child, fill)
				}
				nested[i] = []value.Row{child}
			}
			if _, err := e.BuildNested(row, nested, nil, &Arena{}); err != nil {
				var re *RowError
				if !errors.As(err, &re) || re.Entity != e.Name {
					t.Fatalf("entity %s: building a row fails with %T %v, not a *RowError", e.Name, err, err)
				}
			}
		}
	}
}

// topKeys are the keys a mapping file may have at its top level.
var topKeys = map[string]bool{"version": true, "source": true, "target": true, "vars": true, "entities": true, "access_patterns": true, "defaults": true}

var linePrefixRe = regexp.MustCompile(`^line (\d+): .`)

// checkNamesKey asserts that an error about a mapping file names the key
// it is about. That holds when err is an Errors (the CLI's exit code 2),
// not empty, and each of its problems is one of:
//
//  1. At a key path: Path is not empty and the text is "Path: Msg" with a
//     message. The path starts with a key written at the top of the file
//     or one of the file's known top-level keys, and leads to a value
//     written in the file or, past the last key written, continues only
//     with key names the mapping knows there (pathInFile: a path never
//     invents an entity, index or attribute name). A problem with a key
//     itself (unknown, given twice, a merge key where names are expected)
//     has a path ending with that key. A problem found while decoding
//     (Line > 0) is at a value written on that line, at that path, which
//     indeed does not decode into what the mapping expects there: a wrong
//     type is blamed on its own key even when several keys share a line
//     ({read: x, write: 5}).
//  2. At a YAML position, when no key can carry it (a key that is itself
//     a list, a key given twice in a flow mapping): Path is empty and the
//     text starts with "line N: " where N is the problem's Line, a line of
//     the file.
//  3. About the file as a whole: Path is empty and the text starts with
//     "mapping file ". Only when the file is not a YAML mapping (it does
//     not parse, holds no document, or its top is not a mapping) or when
//     its aliases expand too far as a whole (yaml's "excessive aliasing").
func checkNamesKey(t *testing.T, data []byte, err error) {
	t.Helper()
	var errs Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		t.Fatalf("a mapping problem must be a non-empty mapping.Errors, got %T %q", err, err)
	}
	var doc yaml.Node
	docErr := yaml.Unmarshal(data, &doc)
	isMapping := docErr == nil && len(doc.Content) > 0 && doc.Content[0].Kind == yaml.MappingNode
	// yaml also breaks lines at CR, NEL, LS and PS; this bounds its count.
	nLines := 1
	for _, brk := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
		nLines += strings.Count(string(data), brk)
	}
	for _, e := range errs {
		text := e.Error()
		switch {
		case e == nil || e.Msg == "":
			t.Fatalf("an empty problem in %q", err)
		case e.Path != "":
			if text != e.Path+": "+e.Msg {
				t.Fatalf("%q does not start with its path %q", text, e.Path)
			}
			if !startsWithTopKey(e.Path, doc) {
				t.Fatalf("%q: the path does not start with a key of the file", text)
			}
			if isMapping && !pathInFile(doc.Content[0], e.Path) {
				t.Fatalf("%q: the path leads nowhere in the file\n%s", text, data)
			}
			name, isKey := keyNamed(e.Msg)
			endsWithKey := isKey && (e.Path == name || strings.HasSuffix(e.Path, "."+name))
			// yaml's duplicate key may be blamed on the mapping that holds it.
			dupInValue := strings.HasPrefix(e.Msg, "mapping key ") && isMapping && decodeFailsAt(doc.Content[0], e.Path, e.Line)
			if isKey {
				if !endsWithKey && !dupInValue {
					t.Fatalf("%q: the path does not end with the key %q", text, name)
				}
			} else if strings.HasPrefix(e.Msg, mergeKey) {
				if !strings.HasSuffix(e.Path, "<<") {
					t.Fatalf("%q: not at the merge key", text)
				}
			} else if strings.HasPrefix(e.Msg, nonNameKey) {
				if e.Line < 1 || e.Line > nLines {
					t.Fatalf("%q: line %d is not a line of the file", text, e.Line)
				}
			} else if e.Line > 0 && isMapping && !decodeFailsAt(doc.Content[0], e.Path, e.Line) {
				t.Fatalf("%q: nothing at %s on line %d fails to decode; the problem is blamed on the wrong key\n%s", text, e.Path, e.Line, data)
			}
		case linePrefixRe.MatchString(e.Msg):
			n, _ := strconv.Atoi(linePrefixRe.FindStringSubmatch(e.Msg)[1])
			if n != e.Line || n < 1 || n > nLines {
				t.Fatalf("%q: line %d is not the problem's line %d of %d", text, n, e.Line, nLines)
			}
		case strings.HasPrefix(e.Msg, "mapping file "):
			if isMapping && !strings.Contains(e.Msg, "excessive aliasing") {
				t.Fatalf("%q about the whole file, but it is a YAML mapping", text)
			}
		default:
			t.Fatalf("%q names neither a key path nor a YAML position\n%s", text, data)
		}
	}
}

// startsWithTopKey reports whether path's first segment is a known
// top-level key or one written at the top of doc (which may hold dots).
func startsWithTopKey(path string, doc yaml.Node) bool {
	var keys []string
	for k := range topKeys {
		keys = append(keys, k)
	}
	if len(doc.Content) > 0 && doc.Content[0].Kind == yaml.MappingNode {
		for i := 0; i < len(doc.Content[0].Content); i += 2 {
			keys = append(keys, doc.Content[0].Content[i].Value)
		}
	}
	for _, k := range keys {
		if k != "" && (path == k || strings.HasPrefix(path, k+".") || strings.HasPrefix(path, k+"[")) {
			return true
		}
	}
	return false
}

// keyRe matches the problems that are about a key rather than its value:
// an unknown key, a key given twice.
// pathInFile reports whether path leads to a value written in the file
// or, past the last key written, continues only with key names the mapping
// knows there (entities.e.key.pk when key: is missing): a path never
// invents a name (an entity, an index, an attribute) the file does not
// have.
func pathInFile(root *yaml.Node, path string) bool {
	return pathFrom(root, reflect.TypeFor[Config](), path)
}

// pathFrom resolves rest from node n (nil: not written) of type t (nil:
// unknown), trying every key that matches, as a key may be written twice.
func pathFrom(n *yaml.Node, t reflect.Type, rest string) bool {
	if rest == "" {
		return true
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if (rest == k || strings.HasPrefix(rest, k+".") || strings.HasPrefix(rest, k+"[")) &&
				pathFrom(n.Content[i+1], memberType(t, k), strings.TrimPrefix(rest[len(k):], ".")) {
				return true
			}
		}
	}
	if n != nil && n.Kind == yaml.SequenceNode && strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return false
		}
		i, err := strconv.Atoi(rest[1:end])
		if err != nil || i < 0 || i >= len(n.Content) {
			return false
		}
		var et reflect.Type
		if t != nil && t.Kind() == reflect.Slice {
			et = t.Elem()
		}
		return pathFrom(n.Content[i], et, strings.TrimPrefix(rest[end+1:], "."))
	}
	// Not written: only the mapping's own key names may follow.
	seg, after, _ := strings.Cut(rest, ".")
	if t == nil || t.Kind() != reflect.Struct || strings.Contains(seg, "[") {
		return false
	}
	ft := memberType(t, seg)
	return ft != nil && pathFrom(nil, ft, after)
}

// memberType is the type of key k in a value of type t: a field by its
// yaml name, or an entry of a map; nil when t has no such key.
func memberType(t reflect.Type, k string) reflect.Type {
	if t == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if om, ok := reflect.Zero(t).Interface().(strictyaml.Ordered); ok {
		return om.OrderedValueType()
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem()
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0] == k {
				return t.Field(i).Type
			}
		}
	}
	return nil
}

var keyRe = regexp.MustCompile(`^(?:unknown key |mapping key )?("(?:[^"\\]|\\.)*")(?: is already defined at line \d+| already defined at line \d+|$| \()`)

// mergeKey starts the problem of a merge key where names are expected.
const mergeKey = "a merge key (<<)"

// nonNameKey starts the problem of a key written as a list or a mapping.
const nonNameKey = "a key must be a name"

func keyNamed(msg string) (string, bool) {
	m := keyRe.FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	s, err := strconv.Unquote(m[1])
	return s, err == nil
}

// decodeFailsAt reports whether a value at path, written on line, fails to
// decode into the Go type the mapping has there. It walks the document
// next to Config, as the decoder does; a document whose aliases expand
// past a budget is given the benefit of the doubt.
func decodeFailsAt(root *yaml.Node, path string, line int) bool {
	budget := 1 << 16
	found := false
	var walk func(n *yaml.Node, t reflect.Type, p string)
	walk = func(n *yaml.Node, t reflect.Type, p string) {
		if found || budget <= 0 {
			return
		}
		budget--
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if p == path && n.Line == line && n.Decode(reflect.New(t).Interface()) != nil {
			found = true
			return
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if om, ok := reflect.Zero(t).Interface().(strictyaml.Ordered); ok {
			t = reflect.MapOf(reflect.TypeFor[string](), om.OrderedValueType())
		}
		switch {
		case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if strictyaml.IsMerge(n.Content[i]) { // its mapping (or list of them) merges into t
					one := func(m *yaml.Node, mp string) {
						if m.Kind == yaml.AliasNode && m.Alias != nil {
							m = m.Alias
						}
						if m.Kind != yaml.MappingNode { // yaml merges only mappings
							found = found || (mp == path && m.Line == line)
							return
						}
						walk(m, t, mp)
					}
					v, mp := n.Content[i+1], strictyaml.Join(p, "<<")
					if v.Kind == yaml.SequenceNode {
						for j, c := range v.Content {
							one(c, fmt.Sprintf("%s[%d]", mp, j))
						}
					} else {
						one(v, mp)
					}
				}
				for j := 0; j < t.NumField(); j++ {
					if strings.Split(t.Field(j).Tag.Get("yaml"), ",")[0] == n.Content[i].Value {
						walk(n.Content[i+1], t.Field(j).Type, strictyaml.Join(p, n.Content[i].Value))
					}
				}
			}
		case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], t.Elem(), strictyaml.Join(p, n.Content[i].Value))
			}
		case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, t.Elem(), fmt.Sprintf("%s[%d]", p, i))
			}
		}
	}
	walk(root, reflect.TypeFor[Config](), "")
	return found || budget <= 0
}

// seedFiles are the broken-mapping corpus and the example configs.
func seedFiles(f *testing.F) []string {
	var out []string
	for _, g := range []string{"../testdata/mappings/broken/*.yaml", "../configs/*.yaml"} {
		files, err := filepath.Glob(g)
		if err != nil || len(files) == 0 {
			f.Fatalf("no seed files %s: %v", g, err)
		}
		out = append(out, files...)
	}
	return out
}

type mutationBase []byte

func (b mutationBase) parse(t *testing.T) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return &doc
}

// featureMapping compiles and uses what the example configs do not:
// entity indexes inherited and replaced by items:, a when: condition, a
// nested map, value: and type: attributes, provisioned capacity, defaults.
const featureMapping = `
version: 1
source: {driver: mysql, schema: app}
target:
  table: features
  billing: provisioned
  capacity: {read: 5, write: 5}
  key: {pk: PK, sk: SK}
  attribute_types: {Rank: N}
  indexes:
    GSI1: {type: global, pk: GSI1PK, sk: GSI1SK, projection: include, include: [Name], capacity: {read: 1, write: 1}}
    ByRank: {type: local, sk: Rank, projection: keys_only}
  type_attribute: _type
  ttl_attribute: Expires
vars: {tenant: "7"}
defaults: {on_error: reject}
entities:
  order:
    from: app.orders
    primary_key: [tenant_id, id]
    join:
      customer: {from: customers, on: {id: customer_id}}
      region: {from: regions, on: {id: customer.region_id}}
    where: "tenant_id = ${var.tenant} AND id > 0"
    key: {pk: "T#${tenant_id}#O#${id|pad:10}"}
    index:
      GSI1: {pk: "C#${customer.id|lower}", sk: "${created_at|iso}", when: {column: status, in: [open, held]}}
    attributes:
      Name: customer.name
      Total: {from: total, type: N}
      Flags: {from: flags, type: SS}
      Kind: {value: order}
      Label: "${region.name|upper}/${id|shard:4}"
      Note: {template: "${status} since ${created_at|date}", type: S}
    ttl: {from: created_at, offset: 30d}
    items:
      head:
        key: {sk: "HEAD"}
        type: OrderHead
      lines:
        key: {sk: "LINES#${id}"}
        index: {GSI1: {pk: "L#${id}", sk: "${created_at|epoch}", when: {column: status, not_null: true}}}
        inherit_attributes: false
        attributes: {Rank: {from: line_count, type: N}}
    nest:
      Lines:
        from: order_lines
        on: {order_id: id, tenant_id: tenant_id}
        as: map
        key: line_no
        attributes: {q: qty, p: {from: price, type: N}, s: "${sku|lower}"}
        item: lines
        max_bytes: 20000
        overflow: gzip
    on_error: skip
access_patterns:
  - name: lines of order 3
    query: {pk: "T#7#O#0000000003", sk_between: [A, M], limit: 5}
    expect: {min_count: 1, types: [order#lines], first: {pk: "T#7#O#0000000003", sk: HEAD}}
  - name: by rank
    query: {index: ByRank, pk: "T#7", sk_ge: "3"}
`

// mutationBases are the example configs and featureMapping, each of which
// compiles.
func mutationBases(tb testing.TB) []mutationBase {
	files, err := filepath.Glob("../configs/*.yaml")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no configs: %v", err)
	}
	out := []mutationBase{mutationBase(featureMapping)}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// The mutations of FuzzLoadMutated.
const (
	opSetString = iota // the value becomes a string scalar
	opSetYAML          // the value becomes the YAML the fuzzer wrote
	opDelete           // the entry goes
	opRename           // the key is renamed
	opDuplicate        // the entry is copied under another key
	opCount
)

// site is one mutable entry of a document: the value at index i of
// parent's content (a mapping's key is at i-1).
type site struct {
	parent *yaml.Node
	i      int
	path   string
}

func mutationSites(n *yaml.Node, path string) []site {
	var out []site
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := strictyaml.Join(path, n.Content[i].Value)
			out = append(out, site{n, i + 1, p})
			out = append(out, mutationSites(n.Content[i+1], p)...)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			out = append(out, site{n, i, p})
			out = append(out, mutationSites(c, p)...)
		}
	}
	return out
}

func (s site) apply(op uint8, repl string) bool {
	inMap := s.parent.Kind == yaml.MappingNode
	switch op {
	case opSetString:
		s.parent.Content[s.i] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: repl, Style: yaml.DoubleQuotedStyle}
	case opSetYAML:
		var frag yaml.Node
		if yaml.Unmarshal([]byte(repl), &frag) != nil || len(frag.Content) == 0 {
			return false
		}
		s.parent.Content[s.i] = frag.Content[0]
	case opDelete:
		lo := s.i
		if inMap {
			lo--
		}
		s.parent.Content = append(s.parent.Content[:lo:lo], s.parent.Content[s.i+1:]...)
	case opRename:
		if !inMap {
			return false
		}
		s.parent.Content[s.i-1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: repl}
	case opDuplicate:
		if inMap {
			k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: repl}
			s.parent.Content = append(s.parent.Content, k, s.parent.Content[s.i])
		} else {
			s.parent.Content = append(s.parent.Content, s.parent.Content[s.i])
		}
	default:
		return false
	}
	return true
}

// templateSiteRe matches the key paths whose value Compile parses as a
// template; an attribute written as a bare string is one only when it
// contains "${".
var (
	templateSiteRe  = regexp.MustCompile(`^entities\.[^.]+\.(items\.[^.]+\.)?(key|index\.[^.]+)\.(pk|sk)$|^entities\.[^.]+\.(items\.[^.]+\.|nest\.[^.]+\.)?attributes\.[^.]+\.template$`)
	shorthandSiteRe = regexp.MustCompile(`^entities\.[^.]+\.(items\.[^.]+\.|nest\.[^.]+\.)?attributes\.[^.]+$`)
)

func isTemplateSite(path, value string) bool {
	return value != "" && (templateSiteRe.MatchString(path) || (shorthandSiteRe.MatchString(path) && strings.Contains(value, "${")))
}

// TestBadTemplateAtEverySite writes a malformed template at every place
// of every mutation base that holds one: each must be reported at its own
// key path, also where items: inherit or replace it.
func TestBadTemplateAtEverySite(t *testing.T) {
	bases := mutationBases(t)
	for bi, b := range bases {
		for i, s := range mutationSites(b.parse(t).Content[0], "") {
			if !isTemplateSite(s.path, "${") {
				continue
			}
			t.Run(fmt.Sprintf("%d/%s", bi, s.path), func(t *testing.T) {
				doc := b.parse(t)
				require.True(t, mutationSites(doc.Content[0], "")[i].apply(opSetString, "${"))
				data, err := yaml.Marshal(doc)
				require.NoError(t, err)
				err = loadAndCheck(t, data)
				require.ErrorContains(t, err, s.path+`: bad template "${": unterminated`)
			})
		}
	}
}

// TestOffsetDoesNotWrap: a TTL offset in days past a Duration's range was
// multiplied into an int64 that wrapped, giving expiries in the past.
func TestOffsetDoesNotWrap(t *testing.T) {
	for _, s := range []string{"106752d", "-106752d", "9999999999999999d"} {
		_, err := parseOffset(s)
		require.ErrorContains(t, err, "at most 106751d", s)
	}
	secs, err := parseOffset("106751d")
	require.NoError(t, err)
	require.Equal(t, int64(106751*86400), secs)
}

// TestMergeKeys: YAML merge keys are decoded by yaml, so the key checker
// must follow them instead of calling "<<" an unknown key; where the file
// takes names (entities:), a merge cannot add entries and says so. A
// failing merge is blamed on its key (found by FuzzLoadMutated).
func TestMergeKeys(t *testing.T) {
	const head = "version: 1\nsource: {driver: mysql}\ntarget: {table: tbl, key: {pk: PK}}\n"
	cfg, err := Parse([]byte(head + "entities:\n  a: &A {from: t, key: {pk: P}}\n  b: {<<: *A, from: u}\n"))
	require.NoError(t, err)
	b, _ := cfg.Entities.Get("b")
	require.Equal(t, "u", b.From)
	require.Equal(t, "P", b.Key.PK)
	for src, want := range map[string]string{
		head + "entities:\n  a: &A {from: t, key: {pk: P}}\n  <<: {b: {from: u}}\n": "entities.<<: a merge key (<<) cannot add entries here",
		"<<: 1\n":                               "<<: map merge requires map or sequence of maps",
		"<<: [{version: 1}, {sorce: 1}]\n":      `<<[1].sorce: unknown key "sorce" (did you mean "source"?)`,
		head + "entities: {a: {<<: {keys: 1}}}": `entities.a.<<.keys: unknown key "keys" (did you mean "key"?)`,
	} {
		err := loadAndCheck(t, []byte(src))
		require.ErrorContains(t, err, want, src)
	}
}
