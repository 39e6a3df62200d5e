package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/plan"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/source/drivers"
)

// loaded is a mapping file with the command line's overrides applied and
// checked as far as is possible without a database.
type loaded struct {
	path string
	cfg  *mapping.Config
	vars map[string]string
	// static is the plan compiled without the source schema: it knows the
	// table but has not checked columns.
	static *mapping.Plan
	// schema is the source schema connect compiled the full plan against.
	schema *mapping.Schema
	// schemaOnly: the command checks the mapping against the schema but
	// reads no row (table create), so an unbound ${var.NAME} may pass.
	schemaOnly bool
}

// load reads the mapping file named by --config and applies --table,
// --endpoint, --region, --source-dsn (and their DYNAFOLD_* variables) and
// --var. A problem is exit 2. Commands that read the source call
// loadForSource, which also requires every ${var.NAME} to be bound.
func (a *app) load() (*loaded, error) { return a.loadWith(false) }

// loadForSource is load for commands that read the source.
func (a *app) loadForSource() (*loaded, error) { return a.loadWith(true) }

func (a *app) loadWith(requireVars bool) (*loaded, error) {
	path := a.v.GetString("config")
	if path == "" {
		return nil, usageError(errors.New("--config is required: the mapping file"))
	}
	cfg, err := mapping.Load(path)
	if err != nil {
		if t := a.v.GetString("table"); t != "" {
			// Nothing else of the file is known; the table may be.
			return &loaded{path: path, cfg: &mapping.Config{Target: mapping.TargetConfig{Table: t}}}, mappingLoadError(path, err)
		}
		return nil, mappingLoadError(path, err)
	}
	if t := a.v.GetString("table"); t != "" {
		cfg.Target.Table = t
	}
	if e := a.v.GetString("endpoint"); e != "" {
		cfg.Target.Endpoint = e
	}
	if r := a.v.GetString("region"); r != "" {
		cfg.Target.Region = r
	}
	if d := a.v.GetString("source-dsn"); d != "" {
		cfg.Source.DSN = d
	}
	vars := map[string]string{}
	for _, kv := range a.v.GetStringSlice("var") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError(fmt.Errorf("--var %q: expected NAME=VALUE", kv))
		}
		vars[k] = v
	}
	static, err := mapping.Compile(cfg, nil, mapping.Options{Vars: vars, RequireVars: requireVars})
	if err != nil {
		// The file and its overrides are returned too, so that a report can
		// still name the table.
		return &loaded{path: path, cfg: cfg, vars: vars}, fmt.Errorf("%s:\n%w", path, err)
	}
	return &loaded{path: path, cfg: cfg, vars: vars, static: static}, nil
}

// envRef matches ${NAME} in a DSN, so a mapping file can say
// postgres://app:${PGPASSWORD}@db/app and keep the secret out of the file.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// dsn parses the source DSN, expanding ${NAME} from the environment.
func (l *loaded) dsn() (source.DSN, error) {
	raw := l.cfg.Source.DSN
	if raw == "" {
		return source.DSN{}, usageError(errors.New("no source DSN: set source.dsn, --source-dsn or DYNAFOLD_SOURCE_DSN"))
	}
	var missing []string
	raw = envRef.ReplaceAllStringFunc(raw, func(m string) string {
		name := envRef.FindStringSubmatch(m)[1]
		v, ok := os.LookupEnv(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return source.DSN{}, usageError(fmt.Errorf("source.dsn refers to unset environment variables: %s", strings.Join(missing, ", ")))
	}
	d, err := source.ParseDSN(l.cfg.Source.Driver, raw)
	if err != nil {
		// A *source.DSNError: exit 2 (see exit.go).
		return source.DSN{}, fmt.Errorf("source DSN: %w", err)
	}
	// The DSN's form decides the driver (see source.ParseDSN).
	l.cfg.Source.Driver = d.Driver()
	return d, nil
}

// connect opens the source, introspects the tables the mapping uses and
// compiles the full plan. Unknown tables and columns are exit 2.
func (a *app) connect(ctx context.Context, l *loaded, maxConns int) (source.Source, *mapping.Plan, error) {
	dsn, err := l.dsn()
	if err != nil {
		return nil, nil, err
	}
	src, err := drivers.OpenRetrying(ctx, dsn, drivers.OpenOptions{MaxConns: maxConns, Attempts: a.v.GetInt("source-attempts"), Logger: a.log})
	if err != nil {
		return nil, nil, err
	}
	tables, queries := mapping.SourceTables(l.cfg)
	schema := &mapping.Schema{Queries: map[string]*source.Table{}}
	schema.Tables, err = src.Introspect(ctx, tables)
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	schema.Names = listTablesIfMissing(ctx, src, tables, schema.Tables)
	var qerrs mapping.Errors
	for name, q := range queries {
		t, err := src.DescribeQuery(ctx, q)
		if err != nil {
			qerrs = append(qerrs, &mapping.Error{Path: "entities." + name + ".query", Msg: err.Error()})
			continue
		}
		schema.Queries[name] = t
	}
	if len(qerrs) > 0 {
		src.Close()
		return nil, nil, fmt.Errorf("%s:\n%w", l.path, qerrs)
	}
	plan, err := mapping.Compile(l.cfg, schema, mapping.Options{Vars: l.vars, UnboundVars: l.schemaOnly})
	if err != nil {
		src.Close()
		return nil, nil, fmt.Errorf("%s:\n%w", l.path, err)
	}
	l.schema = schema
	return src, plan, nil
}

// dynamo builds the DynamoDB client for the mapping's target.
func (a *app) dynamo(ctx context.Context, l *loaded, conns int) (*dynamodb.Client, error) {
	client, err := sink.NewClient(ctx, sink.ClientOptions{Region: l.cfg.Target.Region, Endpoint: l.cfg.Target.Endpoint, MaxConns: conns, Logger: a.log,
		AllowInsecure: a.v.GetBool("allow-insecure-endpoint")})
	if err == nil {
		a.learnCredentials(ctx, client.Options().Credentials)
	}
	return client, err
}

// requireTable checks that the target table exists with the mapping's keys
// and indexes, before anything reads or writes it, and returns what
// DescribeTable said (migrate paces to its provisioned capacity).
func (a *app) requireTable(ctx context.Context, client sink.TableAPI, t *mapping.TableSchema, l *loaded) (*sink.TableState, error) {
	state, err := sink.DescribeTable(ctx, client, t)
	if err != nil {
		return nil, err
	}
	switch {
	case !state.Exists:
		return nil, a.missingTable(t.Name, l)
	case len(state.Differences) > 0:
		return nil, fmt.Errorf("table %s does not match the mapping:\n  - %s", t.Name, joinLines(state.Differences))
	}
	return state, nil
}

// missingTable is the error for a target table that does not exist, with
// the command that creates it: the same mapping and the same --table,
// --endpoint and --region the user gave (by flag or environment), so that
// it creates the table this command looked for; the endpoint's userinfo,
// if any, is left for the user to fill in.
func (a *app) missingTable(name string, l *loaded) error {
	cmd := []string{"dynafold", "table", "create", "--config", shellQuote(l.path)}
	for _, f := range []string{"table", "endpoint", "region"} {
		if v := a.v.GetString(f); v != "" {
			if f == "endpoint" {
				v = sink.RedactEndpoint(v) // printed, and often kept in CI logs
			}
			cmd = append(cmd, "--"+f, shellQuote(v))
		}
	}
	return fmt.Errorf("table %s does not exist; create it with: %s", name, strings.Join(cmd, " "))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// listTablesIfMissing lists the source's tables when a mapping's table is
// missing, so that the error can name the one meant (album vs Album). A
// failure to list only loses the hint.
func listTablesIfMissing(ctx context.Context, src source.Source, refs []source.TableRef, found map[source.TableRef]*source.Table) []source.TableRef {
	lister, ok := src.(source.TableLister)
	if !ok {
		return nil
	}
	var names []source.TableRef
	listed := map[string]bool{}
	for _, ref := range refs {
		if found[ref] != nil || listed[ref.Schema] {
			continue
		}
		listed[ref.Schema] = true
		if n, err := lister.Tables(ctx, ref.Schema); err == nil {
			names = append(names, n...)
		}
	}
	return names
}

// mappingLoadError is a mapping file that did not load: mapping errors
// with the file's name, anything else (unreadable) as invalid usage.
func mappingLoadError(path string, err error) error {
	var merrs mapping.Errors
	if errors.As(err, &merrs) {
		return fmt.Errorf("%s:\n%w", path, err)
	}
	return usageError(err)
}

// lintGate stops a command that writes on the mapping errors plan reports
// (exit 2 in both), unless the mapping acknowledges them in lint.ignore:
// plan and migrate agree on what stops a run. An acknowledged finding is
// said once on stderr, so that what was waived stays visible.
func (a *app) lintGate(l *loaded, p *mapping.Plan) error {
	var errs []string
	for _, f := range plan.Lint(p, l.schema, nil) {
		switch {
		case f.Severity == plan.Error:
			errs = append(errs, fmt.Sprintf("%s: %s (%s)", f.Path, f.Message, f.Check))
		case f.Acknowledged:
			fmt.Fprintf(a.console, "dynafold: acknowledged %s %s: %s: %s\n", f.Was, f.Check, f.Path, f.Message)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return usageError(fmt.Errorf("%s: the mapping has %d errors, as dynafold plan reports:\n%s\nfix them, or acknowledge a finding you have judged with lint: {ignore: [CHECK]} in the mapping",
		l.path, len(errs), strings.Join(errs, "\n")))
}

// tableWriter connects to the target, checks the table against the
// mapping and returns a writer paced to --max-wcu, or to the table's
// provisioned write capacity when the flag is not set.
func (a *app) tableWriter(ctx context.Context, l *loaded, plan *mapping.Plan, writers int) (*dynamodb.Client, *sink.DynamoWriter, error) {
	return a.gatedTableWriter(ctx, l, plan, writers, nil)
}

// gatedTableWriter is tableWriter whose every request first asks gate
// (nil: none), and is not sent when it returns an error: sync's lease.
func (a *app) gatedTableWriter(ctx context.Context, l *loaded, plan *mapping.Plan, writers int, gate func() error) (*dynamodb.Client, *sink.DynamoWriter, error) {
	client, err := a.dynamo(ctx, l, writers)
	if err != nil {
		return nil, nil, err
	}
	state, err := a.requireTable(ctx, client, plan.Table, l)
	if err != nil {
		return nil, nil, err
	}
	maxWCU := a.v.GetFloat64("max-wcu")
	if maxWCU <= 0 && state.ProvisionedWrite > 0 {
		maxWCU = float64(state.ProvisionedWrite)
	}
	// The guard makes an endpoint that goes away mid-run one wait, with
	// one warning per retry, rather than every writer's own.
	guard := sink.NewReachGuard(client)
	switch path := a.v.GetString("write-path"); path {
	case "direct":
	case "sdk":
		guard.SendThroughSDK()
	default:
		return nil, nil, usageError(fmt.Errorf("--write-path %q: direct or sdk", path))
	}
	var api sink.BatchWriteAPI = guard
	if gate != nil {
		api = gatedSender{guard: guard, gate: gate}
	}
	return client, sink.NewDynamoWriter(api, plan.Table, sink.WriterOptions{Rate: sink.NewAdaptiveRate(maxWCU)}), nil
}
