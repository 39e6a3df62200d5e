package reverse

import (
	"strings"

	"github.com/dynafold/dynafold/mapping"
)

// lineOf is the line in the mapping file of the most specific entry a key
// path names (an attribute, an index or nest entry, an item of items:, else
// the entity), 0 when unknown.
func lineOf(cfg *mapping.Config, path string) int {
	parts := strings.Split(path, ".")
	if len(parts) < 2 || parts[0] != "entities" {
		return 0
	}
	var e *mapping.Entity
	line := 0
	for _, en := range cfg.Entities {
		if en.Key == parts[1] {
			e, line = en.Value, en.Line
		}
	}
	if e == nil || len(parts) < 4 {
		return line
	}
	name := strings.SplitN(parts[3], " ", 2)[0]
	switch parts[2] {
	case "attributes":
		return entryLine(e.Attributes, name, line)
	case "index":
		return entryLine(e.Index, name, line)
	case "nest":
		return entryLine(e.Nest, name, line)
	case "items":
		it, ok := e.Items.Get(name)
		line = entryLine(e.Items, name, line)
		if ok && it != nil && len(parts) >= 6 && parts[4] == "attributes" {
			return entryLine(it.Attributes, parts[5], line)
		}
	}
	return line
}

func entryLine[T any](m mapping.OrderedMap[T], key string, fallback int) int {
	for _, en := range m {
		if en.Key == key && en.Line > 0 {
			return en.Line
		}
	}
	return fallback
}
