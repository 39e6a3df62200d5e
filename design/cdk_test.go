package design

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/dynafold/dynafold/internal/testenv"
)

// cdkDir holds the pinned CDK toolchain (package.json and its lockfile).
var cdkDir = repoPath("design/testdata/cdk")

// cdkToolchain returns the node_modules directory of the pinned toolchain,
// installing it from the lockfile (npm ci) when it is missing. Without node
// or npm the test skips, and fails under DYNAFOLD_INTEGRATION=1 (CI).
func cdkToolchain(t *testing.T) string {
	t.Helper()
	modules := filepath.Join(cdkDir, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "aws-cdk-lib", "package.json")); err == nil {
		return modules
	}
	missing := func(why string) {
		msg := "the CDK toolchain is missing (" + why + "); run npm ci in design/testdata/cdk"
		if testenv.Integration() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		missing("no npm on PATH")
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = cdkDir
	if out, err := cmd.CombinedOutput(); err != nil {
		missing(fmt.Sprintf("npm ci: %v\n%s", err, out))
	}
	return modules
}

// The CloudFormation output loads through aws-cdk-lib's cloudformation-include,
// which checks every property against the resource specification, and the
// CDK construct compiles (tsc) and synthesizes (cdk synth, offline) the
// same AWS::DynamoDB::Table: for the kitchen sink (provisioned, every
// projection, a local index, TTL, a stream), the portfolios imported from S3, duda
// (a local index) and messages (TTL). One tsc and one cdk synth for all.
func TestCloudFormationAndCDKDefineTheSameTable(t *testing.T) {
	modules := cdkToolchain(t)
	imported := staticModel(t, repoPath("configs/portfolios.yaml"))
	require.NoError(t, imported.SetImport("s3://exports/portfolios/"))
	models := map[string]*Model{
		"kitchensink": kitchenSinkModel(t),
		"portfolios":  imported,
		"duda":        staticModel(t, repoPath("configs/duda.yaml")),
		"messages":    staticModel(t, repoPath("configs/messages.yaml")),
	}
	// Inside cdkDir, so that node and tsc find node_modules.
	dir, err := os.MkdirTemp(cdkDir, "run-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })

	var names []string
	for n := range models {
		names = append(names, n)
	}
	sort.Strings(names)
	app := []string{
		"import { App, Stack } from 'aws-cdk-lib';",
		"import { CfnInclude } from 'aws-cdk-lib/cloudformation-include';",
	}
	for _, n := range names {
		m := models[n]
		writeFile(t, dir, n+".ts", m.WriteCDK)
		writeFile(t, dir, n+".yaml", m.WriteCloudFormation)
		app = append(app, fmt.Sprintf("import { %s } from './%s';", m.LogicalID(), n))
	}
	// cloudformation-include parses every property the resource
	// specification knows, with its type, and keeps any other as a raw
	// override: there must be none.
	app = append(app,
		"function checkSpec(r: any) {",
		"  const extra = JSON.stringify(r.rawOverrides ?? {});",
		"  if (extra !== '{}') { throw new Error(`${r.node.path}: not in the resource specification: ${extra}`); }",
		"}",
		"const app = new App();")
	for _, n := range names {
		app = append(app,
			fmt.Sprintf("new %s(new Stack(app, 'cdk-%s'), 'Design');", models[n].LogicalID(), n),
			fmt.Sprintf("checkSpec(new CfnInclude(new Stack(app, 'cfn-%s'), 'Template', { templateFile: '%s.yaml' }).getResource('%s'));", n, n, models[n].LogicalID()))
	}
	app = append(app, "app.synth();")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "app.ts"), []byte(strings.Join(app, "\n")+"\n"), 0o644))
	tsconfig := `{"compilerOptions": {"target": "ES2022", "module": "commonjs", "strict": true, "skipLibCheck": true, "outDir": "js", "rootDir": "."}, "files": ["app.ts"]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tsconfig.json"), []byte(tsconfig), 0o644))

	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("node", args...)
		cmd.Dir = dir
		// Offline: no notices, no version check, no telemetry.
		cmd.Env = append(os.Environ(), "CDK_DISABLE_CLI_TELEMETRY=true", "CI=true")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "node %s:\n%s", strings.Join(args, " "), out)
	}
	run(filepath.Join(modules, "typescript", "bin", "tsc"), "-p", ".")
	run(filepath.Join(modules, "aws-cdk", "bin", "cdk"), "synth", "--app", "node js/app.js", "--output", "cdk.out",
		"--no-notices", "--no-version-reporting", "--no-lookups", "--quiet")

	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			cdk := tableResource(t, filepath.Join(dir, "cdk.out", "cdk-"+n+".template.json"))
			included := tableResource(t, filepath.Join(dir, "cdk.out", "cfn-"+n+".template.json"))
			var tpl struct {
				Resources map[string]map[string]any `yaml:"Resources"`
			}
			src, err := os.ReadFile(filepath.Join(dir, n+".yaml"))
			require.NoError(t, err)
			require.NoError(t, yaml.Unmarshal(src, &tpl))
			ours := jsonRoundTrip(t, tpl.Resources[models[n].LogicalID()])
			require.Equal(t, ours, included, "cloudformation-include keeps the template as written")
			require.Equal(t, "Retain", cdk["DeletionPolicy"])
			require.Equal(t, normalize(ours["Properties"].(map[string]any)), normalize(cdk["Properties"].(map[string]any)))
		})
	}
}

// tableResource is the one AWS::DynamoDB::Table of a synthesized template.
func tableResource(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var tpl struct{ Resources map[string]map[string]any }
	require.NoError(t, json.Unmarshal(data, &tpl))
	var found []map[string]any
	for _, r := range tpl.Resources {
		if r["Type"] == "AWS::DynamoDB::Table" {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1, "%s", data)
	return found[0]
}

// jsonRoundTrip gives a YAML-decoded value the types JSON decoding gives.
func jsonRoundTrip(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// normalize removes what differs between two definitions of one table
// without changing it: the order of attribute definitions, and
// BillingMode PROVISIONED, which is the default the L2 construct leaves
// unsaid.
func normalize(p map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range p {
		out[k] = v
	}
	if defs, ok := out["AttributeDefinitions"].([]any); ok {
		defs = append([]any(nil), defs...)
		sort.Slice(defs, func(i, j int) bool {
			return defs[i].(map[string]any)["AttributeName"].(string) < defs[j].(map[string]any)["AttributeName"].(string)
		})
		out["AttributeDefinitions"] = defs
	}
	if out["BillingMode"] == "PROVISIONED" {
		delete(out, "BillingMode")
	}
	return out
}
