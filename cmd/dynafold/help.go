package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// examples are the Example: lines of each command's help, by command path.
var examples = map[string]string{
	"dynafold": `  dynafold table create --config configs/portfolios.yaml --endpoint http://127.0.0.1:8000
  dynafold plan    --config configs/portfolios.yaml
  dynafold migrate --config configs/portfolios.yaml --source-dsn postgres://app@db/inventory
  dynafold verify  --config configs/portfolios.yaml`,
	"dynafold table": `  dynafold table create --config configs/portfolios.yaml`,
	"dynafold table create": `  dynafold table create --config configs/portfolios.yaml
  dynafold table create --config configs/portfolios.yaml --endpoint http://127.0.0.1:8000 --table portfolios_test`,
	"dynafold plan": `  dynafold plan --config configs/portfolios.yaml
  dynafold plan --config configs/portfolios.yaml --no-target --output markdown > plan.md`,
	"dynafold migrate": `  dynafold migrate --config configs/portfolios.yaml
  dynafold migrate --config configs/portfolios.yaml --dry-run
  dynafold migrate --config configs/photos.yaml --var tenant=7 --max-wcu 500 --report run.json
  DYNAFOLD_SOURCE_DSN=postgres://app@replica/inventory dynafold migrate --config configs/portfolios.yaml --restart`,
	"dynafold diff": `  dynafold diff --config configs/portfolios.yaml
  dynafold diff --config configs/portfolios.yaml --output markdown > diff.md`,
	"dynafold verify": `  dynafold verify --config configs/portfolios.yaml
  dynafold verify --config configs/portfolios.yaml --sample 0.01 --seed 7`,
	"dynafold patterns": `  dynafold patterns --config configs/portfolios.yaml
  dynafold patterns --config configs/portfolios.yaml --items --output json`,
	"dynafold dump": `  dynafold dump --config configs/portfolios.yaml --endpoint http://127.0.0.1:8000
  dynafold dump --config configs/portfolios.yaml | jq -c 'select(._type == "server")'`,
	"dynafold design": `  dynafold design html --config configs/portfolios.yaml --out portfolios.html
  dynafold design workbench --config configs/portfolios.yaml --no-source > portfolios.json`,
	"dynafold design workbench": `  dynafold design workbench --config configs/portfolios.yaml --sample 10 --out portfolios.json`,
	"dynafold design cloudformation": `  dynafold design cloudformation --config configs/portfolios.yaml --no-source --out table.yaml
  dynafold design cloudformation --config configs/portfolios.yaml --no-source --import-from s3://exports/portfolios/`,
	"dynafold design cdk":       `  dynafold design cdk --config configs/portfolios.yaml --no-source --out lib/portfolios-table.ts`,
	"dynafold design terraform": `  dynafold design terraform --config configs/portfolios.yaml --no-source --out dynamodb.tf`,
	"dynafold design html": `  dynafold design html --config configs/portfolios.yaml --out portfolios.html
  dynafold design html --config configs/chinook.yaml --measure-sample 0.1 --out chinook.html
  dynafold design html --config configs/chinook.yaml --sample-keys CUSTOMER#1,GSI1PK=EMPLOYEE#3 --out chinook.html`,
	"dynafold version": `  dynafold version
  dynafold --version`,
}

// exitCodesHelp ends every command's help.
const exitCodesHelp = `
Exit codes:
  0  success, nothing pending
  1  failure (a source or endpoint that cannot be reached, a row under on_error: fail, --max-rejects exceeded, a checkpoint in use)
  2  invalid usage or mapping (unknown flag, bad file, unknown column, changed mapping on resume)
  3  differences found (verify, diff, patterns), or data over a hard limit (plan)
  4  interrupted or failed resumably (migrate): the checkpoint is saved, run again to resume
  5  finished, but some rows were rejected or skipped (migrate)
`

// addHelp sets every command's Example: lines and ends its help with the
// exit codes and the environment variables that stand for its flags.
func addHelp(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if ex, ok := examples[c.CommandPath()]; ok {
			c.Example = ex
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		defaultHelp(c, args)
		out := c.OutOrStdout()
		fmt.Fprint(out, exitCodesHelp)
		writeEnvHelp(out, c)
	})
}

// writeEnvHelp lists DYNAFOLD_<FLAG> for each of the command's flags: viper
// reads every flag from the environment too (a flag beats the environment,
// which beats the mapping file).
func writeEnvHelp(w io.Writer, c *cobra.Command) {
	var names []string
	add := func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" || f.Name == "version" {
			return
		}
		names = append(names, "DYNAFOLD_"+strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_")))
	}
	c.LocalFlags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	sort.Strings(names)
	fmt.Fprintln(w, "\nEnvironment:")
	if len(names) > 0 {
		fmt.Fprintln(w, "  Every flag can be set as DYNAFOLD_<FLAG> (upper case, - as _); a flag beats the environment, which beats the mapping file:")
		for i := 0; i < len(names); i += 4 {
			fmt.Fprintln(w, "    "+strings.Join(names[i:min(i+4, len(names))], "  "))
		}
	}
	fmt.Fprintln(w, "  AWS_REGION, AWS_PROFILE, AWS_ACCESS_KEY_ID, … the standard AWS chain; AWS_MAX_ATTEMPTS: attempts of DynamoDB reads and table calls (default 8)")
	fmt.Fprintln(w, "  ${NAME} in source.dsn is read from the environment (e.g. ${PGPASSWORD})")
	fmt.Fprintln(w, "  NO_COLOR (set, any value) or TERM=dumb: no colour and no live bars on a terminal")
}

// versionInfo is the module version and the VCS revision the binary was
// built from, as debug.ReadBuildInfo records them.
func versionInfo() string {
	version, rev, when, modified := "(unknown)", "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	b := &strings.Builder{}
	fmt.Fprintf(b, "dynafold %s", version)
	switch {
	case rev == "":
		b.WriteString(", revision unknown (built without VCS information)")
	default:
		fmt.Fprintf(b, ", revision %s", rev)
		if when != "" {
			fmt.Fprintf(b, " (%s)", when)
		}
		if modified {
			b.WriteString(", with uncommitted changes")
		}
	}
	fmt.Fprintf(b, ", %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return b.String()
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:         "version",
		Short:       "Print the version and the VCS revision dynafold was built from",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{outputsAnnotation: "text"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(a.stdout, versionInfo())
			return err
		},
	}
}
