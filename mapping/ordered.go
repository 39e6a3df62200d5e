package mapping

import (
	"reflect"

	"go.yaml.in/yaml/v3"
)

// Entry is one key of an OrderedMap with the file line it came from.
type Entry[T any] struct {
	Key   string
	Value T
	Line  int
}

// OrderedMap is a YAML mapping that keeps the file's order, so that entities,
// attributes and indexes are processed and reported in the order written.
type OrderedMap[T any] []Entry[T]

// UnmarshalYAML implements yaml.Unmarshaler.
func (m *OrderedMap[T]) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		*m = nil
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{lineMsg(n, "expected a mapping of names to values")}}
	}
	out := make(OrderedMap[T], 0, len(n.Content)/2)
	var errs []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var val T
		if err := v.Decode(&val); err != nil {
			if te, ok := err.(*yaml.TypeError); ok {
				errs = append(errs, te.Errors...)
				continue
			}
			return err
		}
		out = append(out, Entry[T]{Key: k.Value, Value: val, Line: k.Line})
	}
	*m = out
	if len(errs) > 0 {
		return &yaml.TypeError{Errors: errs}
	}
	return nil
}

// Get returns the value for key.
func (m OrderedMap[T]) Get(key string) (T, bool) {
	for _, e := range m {
		if e.Key == key {
			return e.Value, true
		}
	}
	var zero T
	return zero, false
}

// Keys returns the keys in file order.
func (m OrderedMap[T]) Keys() []string {
	out := make([]string, len(m))
	for i, e := range m {
		out[i] = e.Key
	}
	return out
}

// OrderedValueType lets the strict decoder see through an OrderedMap
// (strictyaml.Ordered).
func (OrderedMap[T]) OrderedValueType() reflect.Type {
	return reflect.TypeOf((*T)(nil)).Elem()
}
