package mapping

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBrokenMappings checks every file of the malformed-mapping corpus
// against the message it must produce (the .err file beside it). Each
// message names the key path, so an operator can find the mistake.
func TestBrokenMappings(t *testing.T) {
	files, err := filepath.Glob("../testdata/mappings/broken/*.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 20)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".err")
			require.NoError(t, err)
			cfg, err := Load(f)
			if err == nil {
				_, err = Compile(cfg, nil, Options{RequireVars: true})
			}
			require.Error(t, err)
			var errs Errors
			require.ErrorAs(t, err, &errs, "mapping problems are reported as mapping.Errors (exit code 2)")
			require.Contains(t, err.Error(), strings.TrimSpace(string(want)))
		})
	}
}

func TestExampleConfigsLoad(t *testing.T) {
	files, err := filepath.Glob("../configs/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := Load(f)
			require.NoError(t, err)
			_, err = Compile(cfg, nil, Options{Vars: map[string]string{"tenant": "7"}})
			require.NoError(t, err)
		})
	}
}

func TestAttributeShorthand(t *testing.T) {
	cfg, err := Parse([]byte(`
version: 1
source: {driver: mysql}
target: {table: things, key: {pk: PK}}
entities:
  thing:
    from: things
    key: {pk: "T#${id}"}
    attributes:
      Name: name
      Parent: parent.name
      Label: "${name|upper}!"
      Kind: {value: widget}
      Price: {from: price, type: N}
`))
	require.NoError(t, err)
	attrs := cfg.Entities[0].Value.Attributes
	require.Equal(t, []string{"Name", "Parent", "Label", "Kind", "Price"}, attrs.Keys(), "file order is kept")
	require.Equal(t, "name", attrs[0].Value.From)
	require.Equal(t, "parent.name", attrs[1].Value.From)
	require.Equal(t, "${name|upper}!", attrs[2].Value.Template)
	require.Equal(t, "widget", *attrs[3].Value.Value)
	require.Equal(t, "N", attrs[4].Value.Type)
}

func TestMultipleErrorsAreAllReported(t *testing.T) {
	_, err := Parse([]byte(`
version: 1
sorce: {driver: postgres}
target: {tabel: x}
`))
	require.Error(t, err)
	require.Contains(t, err.Error(), `sorce: unknown key "sorce" (did you mean "source"?)`)
	require.Contains(t, err.Error(), `target.tabel: unknown key "tabel" (did you mean "table"?)`)
}
