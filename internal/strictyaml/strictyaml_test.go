package strictyaml

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

type limits struct {
	Read  int `yaml:"read"`
	Write int `yaml:"write"`
}

type doc struct {
	Name   string            `yaml:"name"`
	Limits limits            `yaml:"limits"`
	Tags   map[string]string `yaml:"tags"`
}

func decode(t *testing.T, text string) (doc, []*Error) {
	t.Helper()
	var n yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(text), &n))
	var d doc
	return d, Decode(n.Content[0], &d, "test file")
}

// Every problem is named by its key path and line: an unknown key with
// the key it was likely meant to be, and a bad value on a line shared
// with a good one.
func TestDecodeLocatesEveryProblem(t *testing.T) {
	_, errs := decode(t, "name: x\nlimts: {read: 1}\nlimits: {read: 5, write: many}\n")
	require.Len(t, errs, 2)
	require.Equal(t, &Error{Path: "limts", Line: 2, Msg: `unknown key "limts" (did you mean "limits"?)`}, errs[0])
	require.Equal(t, "limits.write", errs[1].Path)
	require.Equal(t, 3, errs[1].Line)
	require.Contains(t, errs[1].Msg, "expected a different type, got string")
}

func TestDecodeMergesAndMaps(t *testing.T) {
	_, errs := decode(t, "base: &b {read: 2}\nname: x\nlimits: {<<: *b, write: 3}\ntags: {a: b}\n")
	require.Len(t, errs, 1, "base is not a key of the document")
	require.Equal(t, "base", errs[0].Path)
	d, errs := decode(t, "name: x\nlimits: {<<: {read: 2}, write: 3}\ntags: {a: b}\n")
	require.Empty(t, errs)
	require.Equal(t, doc{Name: "x", Limits: limits{Read: 2, Write: 3}, Tags: map[string]string{"a": "b"}}, d)
}

func TestSuggest(t *testing.T) {
	require.Equal(t, "entities", Suggest("entites", []string{"source", "target", "entities"}))
	require.Empty(t, Suggest("zzz", []string{"source", "target"}))
}
