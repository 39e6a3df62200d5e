package docexamples

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Parse finds the command args name in root's tree and parses its flags
// and arguments as cobra would before running it: an unknown command, an
// unknown flag, a flag without its value or the wrong number of arguments
// is an error. args excludes the program's name. root must be fresh: a
// parsed command keeps its flags' values.
func Parse(root *cobra.Command, args []string) (*cobra.Command, error) {
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return nil, err
	}
	cmd.InitDefaultHelpFlag()
	if err := cmd.ParseFlags(rest); err != nil {
		return cmd, fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	if help, _ := cmd.Flags().GetBool("help"); help {
		return cmd, nil
	}
	positional := cmd.Flags().Args()
	if !cmd.Runnable() {
		if len(positional) > 0 {
			return cmd, fmt.Errorf("unknown command %q for %q", positional[0], cmd.CommandPath())
		}
		var subs []string
		for _, c := range cmd.Commands() {
			subs = append(subs, c.Name())
		}
		return cmd, fmt.Errorf("%s does not run by itself; name one of: %s", cmd.CommandPath(), strings.Join(subs, ", "))
	}
	if err := cmd.ValidateArgs(positional); err != nil {
		return cmd, fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	return cmd, nil
}
