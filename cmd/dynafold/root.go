package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/dynafold/dynafold/internal/durable"
	"github.com/dynafold/dynafold/internal/redact"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source/drivers"
)

// app is one invocation: its settings, streams and logger. Nothing here is
// package-level, so tests can run commands in-process side by side.
type app struct {
	v      *viper.Viper
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// console is stderr for log lines and messages (see logging.go).
	console *console
	log     *slog.Logger
	// stop is closed on the first SIGINT/SIGTERM (see signals.go).
	stop <-chan struct{}
	// profile is the open CPU profile, when --cpuprofile is set;
	// memProfile the path of the allocation profile written at exit.
	profile    *os.File
	memProfile string
	// traceFile is the open execution trace, when --trace is set.
	traceFile *os.File
	// parsed is set once cobra has parsed the command line: an error
	// before that (unknown command or flag, bad arguments) is invalid usage.
	parsed bool
	// secrets redacts stdout, stderr, the console and reports (see
	// secrets.go); data is stdout for what a command prints as data, and
	// tty stderr for the live display, which draws only on a terminal's
	// *os.File: neither is redacted.
	secrets *redact.Redactor
	data    io.Writer
	tty     io.Writer
}

func (a *app) startProfile(path string) error {
	f, err := createPrivate(path)
	if err != nil {
		return err
	}
	a.profile = f
	return pprof.StartCPUProfile(f)
}

// startTrace writes an execution trace (go tool trace) to path until
// exit: where goroutines waited on the network, on each other or for a
// CPU, which a CPU profile cannot show.
func (a *app) startTrace(path string) error {
	f, err := createPrivate(path)
	if err != nil {
		return err
	}
	a.traceFile = f
	return trace.Start(f)
}

// createPrivate is os.Create with the owner-only mode of every file
// dynafold writes: a profile or trace names the code, not the data, but
// one rule for all files is one nobody has to think about.
func createPrivate(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, durable.FileMode)
}

func (a *app) stopProfile() {
	if a.traceFile != nil {
		trace.Stop()
		a.traceFile.Close()
		a.traceFile = nil
	}
	if a.profile != nil {
		pprof.StopCPUProfile()
		a.profile.Close()
		a.profile = nil
	}
	if a.memProfile != "" {
		// Every allocation since the start, sampled (pprof -sample_index
		// alloc_space shows what the collector had to clear up).
		if f, err := createPrivate(a.memProfile); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
		a.memProfile = ""
	}
}

// execute runs the CLI and returns the exit code.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	secrets := newSecrets()
	a := &app{v: viper.New(), stdin: stdin, stdout: secrets.Writer(stdout), stderr: secrets.Writer(stderr), secrets: secrets, data: stdout, tty: stderr}
	a.console = newConsole(stderr, secrets)
	ctx, stop, cleanup := handleSignals(ctx, a.console)
	defer cleanup()
	a.stop = stop
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	a.stopProfile() // also when the command failed
	if err != nil && !a.parsed {
		err = usageError(err)
	}
	code := exitCode(err)
	if err != nil && !errors.Is(err, errReported) {
		fmt.Fprintln(a.stderr, "dynafold: "+indentLines(plainMessage(err)))
	}
	return code
}

// plainMessage is what the operator reads for err: a service that could
// not be reached is said in one plain line, without the layers of
// operation names and retry wrappers around it.
func plainMessage(err error) string {
	var ue *sink.UnreachableError
	var ce *drivers.ConnectError
	var msg string
	switch {
	case errors.As(err, &ue):
		msg = ue.Error()
	case errors.As(err, &ce):
		msg = ce.Error()
	default:
		return err.Error()
	}
	// Mid-run, what was done is kept: say so.
	var resumable *pipeline.ResumableError
	if errors.As(err, &resumable) {
		msg += "; checkpoint saved, run again to resume"
	}
	return msg
}

// errReported wraps an error whose message was already printed.
var errReported = errors.New("reported")

func indentLines(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "dynafold",
		Short: "Migrate relational data into one DynamoDB table in single-table design",
		Long: `dynafold reads PostgreSQL or MySQL/MariaDB tables in one consistent snapshot,
pre-joins them into item collections as a mapping file declares, and writes them
to one DynamoDB table with BatchWriteItem, checkpointing as it goes.

Exit codes: 0 success · 1 failure · 2 invalid usage or mapping · 3 differences
found · 4 interrupted (checkpoint saved, resumable) · 5 finished with rejected rows.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.parsed = true
			return a.setup(cmd)
		},
		PersistentPostRun: func(*cobra.Command, []string) { a.stopProfile() },
	}
	root.SetFlagErrorFunc(suggestFlag)
	pf := root.PersistentFlags()
	pf.StringP("config", "c", "", "mapping file (YAML)")
	pf.String("source-dsn", "", "source database DSN, overrides source.dsn (env DYNAFOLD_SOURCE_DSN)")
	pf.String("endpoint", "", "DynamoDB endpoint URL, overrides target.endpoint (env DYNAFOLD_ENDPOINT)")
	pf.Bool("allow-insecure-endpoint", false, "sign with real AWS credentials over plain HTTP to an endpoint that is not loopback: any DynamoDB or S3 endpoint, from a flag, AWS_ENDPOINT_URL* or a profile (env DYNAFOLD_ALLOW_INSECURE_ENDPOINT)")
	pf.String("table", "", "DynamoDB table name, overrides target.table (env DYNAFOLD_TABLE)")
	pf.String("region", "", "AWS region, overrides target.region (env DYNAFOLD_REGION)")
	pf.StringArray("var", nil, "bind a mapping variable, NAME=VALUE (repeatable)")
	pf.String("report", "", "also write a JSON report to this path")
	pf.StringP("output", "o", "text", "output format: text, json or markdown")
	pf.String("log-level", "warn", "log level: debug, info, warn or error")
	pf.Int("source-attempts", 5, "attempts to connect to a source that cannot be reached, with backoff (about 7 s for 5)")
	pf.String("cpuprofile", "", "write a CPU profile to this file (for development)")
	_ = pf.MarkHidden("cpuprofile")
	pf.String("memprofile", "", "write an allocation profile to this file at exit (for development)")
	_ = pf.MarkHidden("memprofile")
	pf.String("trace", "", "write an execution trace to this file (for development)")
	_ = pf.MarkHidden("trace")
	pf.String("write-path", "direct", "how BatchWriteItem requests are sent: direct (pre-encoded and signed by dynafold) or sdk (through the AWS SDK's client, slower; for diagnosis and tests)")
	_ = pf.MarkHidden("write-path")
	root.AddCommand(a.tableCommand(), a.migrateCommand(), a.exportCommand(), a.syncCommand(), a.planCommand(), a.verifyCommand(), a.diffCommand(), a.dumpCommand(), a.patternsCommand(), a.designCommand(), a.versionCommand())
	root.Version = strings.TrimSuffix(versionInfo(), "\n")
	root.SetVersionTemplate("{{.Version}}\n")
	addHelp(root)
	return root
}

// setup binds flags and environment variables through viper: a flag wins
// over DYNAFOLD_* in the environment, which wins over the mapping file.
func (a *app) setup(cmd *cobra.Command) error {
	a.v.SetEnvPrefix("DYNAFOLD")
	a.v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	a.v.AutomaticEnv()
	for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.InheritedFlags()} {
		if err := a.v.BindPFlags(fs); err != nil {
			return err
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.v.GetString("log-level"))); err != nil {
		return usageError(fmt.Errorf("--log-level: %w", err))
	}
	a.log = newLogger(a.console, level, isTerminal(a.stderr))
	if path := a.v.GetString("cpuprofile"); path != "" {
		if err := a.startProfile(path); err != nil {
			return err
		}
	}
	a.memProfile = a.v.GetString("memprofile")
	if path := a.v.GetString("trace"); path != "" {
		if err := a.startTrace(path); err != nil {
			return err
		}
	}
	switch out := a.v.GetString("output"); out {
	case "text", "json", "markdown":
		if allowed, ok := cmd.Annotations[outputsAnnotation]; ok && !slices.Contains(strings.Split(allowed, ","), out) {
			return usageError(fmt.Errorf("--output %s: %s cannot produce %s; it can produce %s", out, cmd.CommandPath(), out, strings.ReplaceAll(allowed, ",", " or ")))
		}
	default:
		return usageError(fmt.Errorf("--output must be text, json or markdown, not %q", out))
	}
	return nil
}

// suggestFlag adds "did you mean" to an unknown flag's error, from the
// flags the command has (cobra does it for commands only).
func suggestFlag(c *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || strings.HasPrefix(err.Error(), "unknown shorthand") {
		return err
	}
	var names []string
	collect := func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	}
	c.Flags().VisitAll(collect)
	c.InheritedFlags().VisitAll(collect)
	if s := mapping.Suggest(ne.GetSpecifiedName(), names); s != "" {
		return fmt.Errorf("%w (did you mean --%s?)", err, s)
	}
	return err
}

// outputsAnnotation lists, on a command that cannot produce every
// --output format, the ones it can ("text,json").
const outputsAnnotation = "dynafold/outputs"

// color reports whether to colour what goes to w: only on a terminal, and
// not when NO_COLOR is set (https://no-color.org) or TERM is dumb.
func (a *app) color(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("NO_COLOR") == "" && !dumbTerminal()
}

// dumbTerminal is TERM=dumb: a terminal that cannot move the cursor, so
// no live bars either.
func dumbTerminal() bool { return os.Getenv("TERM") == "dumb" }

// isTerminal reports whether w is a terminal (for colour and live progress).
func isTerminal(w io.Writer) bool {
	if r, ok := w.(*redact.Writer); ok {
		w = r.Underlying()
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
