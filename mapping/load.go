package mapping

import (
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dynafold/dynafold/internal/strictyaml"
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
	var cfg Config
	if errs := strictyaml.Decode(root, &cfg, "mapping file"); len(errs) > 0 {
		// yaml's messages quote the value that does not decode.
		return nil, hideSecrets(Errors(errs).err().(Errors), secretValues(root))
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

// suggest returns the known name closest to s when it is close enough to
// be a typo.
func suggest(s string, known []string) string { return strictyaml.Suggest(s, known) }

// Suggest returns the entry of known closest to s (ignoring case), when it
// is close enough to be a likely typo, else "".
func Suggest(s string, known []string) string { return suggest(s, known) }
