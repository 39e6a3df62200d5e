package docexamples

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`dynafold migrate --config F`, []string{"dynafold", "migrate", "--config", "F"}},
		{`a 'b c' "d $E" f\ g`, []string{"a", "b c", "d $E", "f g"}},
		{`x "${DSN%%/postgres*}/NAME"`, []string{"x", "${DSN%%/postgres*}/NAME"}},
	} {
		require.Equal(t, tc.want, Split(tc.in), tc.in)
	}
}

func TestCommandsAndLinks(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "page.md")
	require.NoError(t, os.WriteFile(page, []byte("# A page\n\n## Two: words\n\n"+
		"```sh\nAWS_MAX_ATTEMPTS=2 dynafold plan --config F \\\n   --no-target   # a comment\nmake build && dynafold version\n```\n"+
		"```yaml\ndynafold: not a command\n```\n"+
		"| `dynafold dump --config F` | `dynafold design a|b` |\n\n"+
		"[ok](#two-words) [bad](#three) [gone](missing.md) [web](https://example.com) `[code](x.md)`\n"), 0o644))
	cmds, err := Commands(page, "dynafold", "make")
	require.NoError(t, err)
	require.Len(t, cmds, 3)
	require.Equal(t, []string{"dynafold", "plan", "--config", "F", "--no-target"}, cmds[0].Words)
	require.Equal(t, 6, cmds[0].Line)
	require.Equal(t, []string{"make", "build"}, cmds[1].Words)
	require.Equal(t, []string{"dynafold", "version"}, cmds[2].Words)
	inline, err := InlineCommands(page, "dynafold")
	require.NoError(t, err)
	require.Len(t, inline, 1)
	require.Equal(t, []string{"dynafold", "dump", "--config", "F"}, inline[0].Words)

	blocks, err := Blocks(page, "yaml")
	require.NoError(t, err)
	require.Equal(t, []Block{{File: page, Line: 11, Text: "dynafold: not a command\n"}}, blocks)

	links, err := Links(page)
	require.NoError(t, err)
	require.Len(t, links, 3)
	require.Empty(t, CheckLink(links[0]))
	require.Contains(t, CheckLink(links[1]), "no heading #three")
	require.Contains(t, CheckLink(links[2]), "missing.md does not exist")
}

func TestTaggedBlocks(t *testing.T) {
	page := filepath.Join(t.TempDir(), "page.md")
	require.NoError(t, os.WriteFile(page, []byte("```sql postgres-read\nSELECT 1;\n```\n"+
		"```sql\nSELECT 2;\n```\n"+
		"```sql mysql-read extra\nSELECT 3;\n```\n"+
		"```sqlite\nSELECT 4;\n```\n"), 0o644))
	blocks, err := Blocks(page, "sql")
	require.NoError(t, err)
	require.Equal(t, []Block{
		{File: page, Line: 2, Text: "SELECT 1;\n", Tags: []string{"postgres-read"}},
		{File: page, Line: 5, Text: "SELECT 2;\n"},
		{File: page, Line: 8, Text: "SELECT 3;\n", Tags: []string{"mysql-read", "extra"}},
	}, blocks)
	b, err := Tagged(page, "sql", "mysql-read")
	require.NoError(t, err)
	require.Equal(t, "SELECT 3;\n", b.Text)
	_, err = Tagged(page, "sql", "postgres-sync")
	require.ErrorContains(t, err, "0 blocks tagged ```sql postgres-sync")
}

func TestParse(t *testing.T) {
	root := func() *cobra.Command {
		r := &cobra.Command{Use: "tool"}
		group := &cobra.Command{Use: "table"}
		create := &cobra.Command{Use: "create", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error { return nil }}
		create.Flags().String("config", "", "")
		r.PersistentFlags().String("endpoint", "", "")
		group.AddCommand(create)
		r.AddCommand(group)
		return r
	}
	_, err := Parse(root(), []string{"table", "create", "--config", "F", "--endpoint", "E"})
	require.NoError(t, err)
	_, err = Parse(root(), []string{"table", "create", "--help"})
	require.NoError(t, err)
	_, err = Parse(root(), []string{"table", "create", "--confg", "F"})
	require.ErrorContains(t, err, "unknown flag: --confg")
	_, err = Parse(root(), []string{"table", "creat"})
	require.ErrorContains(t, err, `unknown command "creat"`)
	_, err = Parse(root(), []string{"table"})
	require.ErrorContains(t, err, "does not run by itself")
	_, err = Parse(root(), []string{"table", "create", "extra"})
	require.ErrorContains(t, err, "unknown command")
	_, err = Parse(root(), []string{"table", "create", "--config"})
	require.ErrorContains(t, err, "needs an argument")
}
