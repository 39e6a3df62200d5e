package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/plan"
	"github.com/dynafold/dynafold/reverse"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
)

// targetTimeout bounds describing the target: it is optional, and an
// endpoint that accepts and never answers must not hold the plan up. A
// refused connection fails at once (one retry, 100 ms later at most, see
// briefTable); the bound only meets a slow answer, so it is generous: a
// busy endpoint (one dynalite serving a whole test run) took over 5 s to
// describe a table, and the plan then lost the table's capacity.
const targetTimeout = 20 * time.Second

func (a *app) planCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Lint the mapping and measure the source: sizes, hot keys, capacity, cost and time; writes nothing",
		Long: `Checks the mapping (key uniqueness, colliding entities, ambiguous delimiters,
indexes and projections, reserved words, key types), then reads the source once,
building every item as migrate would, and reports item sizes against 400 KB, key
lengths, item collections, hot partition keys, GSI key skew, duplicate keys,
write units, on-demand cost, duration and storage. Nothing is written; the
target table is only described, when it can be.

Exit codes: 0 no errors (warnings allowed) · 1 failure · 2 the mapping has
errors · 3 the data breaks a hard limit (item over 400 KB, key too long, item
collection over 10 GB with a local index, duplicate keys).`,
		Args: cobra.NoArgs,
		RunE: a.runPlan,
	}
	f := cmd.Flags()
	f.Float64("sample", 1, "fraction of rows to measure, chosen by a hash of the primary key (counts are scaled and the report says so)")
	f.Float64("max-wcu", 0, "write rate the migration will use, for the duration estimate (default: the table's provisioned capacity, else an on-demand assumption)")
	f.Float64("write-price", plan.DefaultWritePrice, "on-demand price in USD per million write request units (default: us-east-1)")
	f.Int("concurrency", 4, "shards read at once")
	f.Int("page-size", pipeline.DefaultPageSize, "rows per keyset page")
	f.Int("top", 5, "how many largest items, collections and hot keys to list")
	f.Int("max-keys", 1_000_000, "distinct partition-key values counted exactly per key space; beyond, heavy hitters are tracked with a stated error bound")
	f.Int("max-dup-keys", 4_000_000, "item keys kept (as 64-bit hashes, about 20 bytes each) for exact duplicate detection")
	f.Bool("no-target", false, "do not describe the target table")
	f.String("sink", "migrate", "how the items will be loaded: migrate (BatchWrite) or import (export + ImportTable: refuses LSIs and an existing table, shows the import cost)")
	f.Float64("import-price", plan.DefaultImportPrice, "with --sink import: ImportTable price in USD per GB (default: us-east-1)")
	f.Bool("reversible", false, "also decide, per entity and column, whether the rows can be rebuilt from the items (fail-back); what cannot is a mapping error (exit 2)")
	f.String("slot", "", "the replication slot sync would use, for the sync readiness checks, folded as sync folds it (default dynafold_<table>)")
	// Lowered limits, for tests: the defaults are DynamoDB's.
	lim := plan.DefaultLimits()
	f.Int("max-item-bytes", lim.ItemBytes, "item size limit")
	f.Int("max-pk-bytes", lim.PartitionKeyBytes, "partition key length limit")
	f.Int("max-sk-bytes", lim.SortKeyBytes, "sort key length limit")
	f.Int64("lsi-collection-bytes", lim.LSICollectionBytes, "item collection limit with a local index")
	f.Float64("partition-wcu", lim.PartitionWCU, "write units per second one partition accepts")
	f.Int("heavy-hitters", 10_000, "Space-Saving counters per key space")
	for _, name := range []string{"max-item-bytes", "max-pk-bytes", "max-sk-bytes", "lsi-collection-bytes", "partition-wcu", "heavy-hitters"} {
		_ = f.MarkHidden(name)
	}
	return cmd
}

// planOptions reads the flags; a bad value is invalid usage.
func (a *app) planOptions() (plan.Options, error) {
	v := a.v
	def := plan.DefaultLimits()
	o := plan.Options{
		Limits: plan.Limits{
			ItemBytes:          v.GetInt("max-item-bytes"),
			PartitionKeyBytes:  v.GetInt("max-pk-bytes"),
			SortKeyBytes:       v.GetInt("max-sk-bytes"),
			LSICollectionBytes: v.GetInt64("lsi-collection-bytes"),
			PartitionWCU:       v.GetFloat64("partition-wcu"),
		},
		Sample:       v.GetFloat64("sample"),
		Readers:      v.GetInt("concurrency"),
		PageSize:     v.GetInt("page-size"),
		Top:          v.GetInt("top"),
		MaxKeys:      v.GetInt("max-keys"),
		MaxDupKeys:   v.GetInt("max-dup-keys"),
		HeavyHitters: v.GetInt("heavy-hitters"),
		WritePrice:   v.GetFloat64("write-price"),
		MaxWCU:       v.GetFloat64("max-wcu"),
	}
	l := o.Limits
	switch {
	case o.Sample <= 0 || o.Sample > 1:
		return o, usageError(fmt.Errorf("--sample must be a fraction in (0, 1], not %g", o.Sample))
	case o.Readers < 1 || o.PageSize < 1 || o.Top < 1 || o.MaxKeys < 1 || o.MaxDupKeys < 1 || o.HeavyHitters < 1:
		return o, usageError(errors.New("--concurrency, --page-size, --top, --max-keys and --max-dup-keys must be at least 1"))
	case o.MaxWCU < 0 || o.WritePrice <= 0:
		return o, usageError(errors.New("--max-wcu must not be negative and --write-price must be positive"))
	case l.ItemBytes < 1 || l.ItemBytes > def.ItemBytes || l.PartitionKeyBytes < 1 || l.PartitionKeyBytes > def.PartitionKeyBytes ||
		l.SortKeyBytes < 1 || l.SortKeyBytes > def.SortKeyBytes || l.LSICollectionBytes < 1 || l.LSICollectionBytes > def.LSICollectionBytes ||
		l.PartitionWCU <= 0 || l.PartitionWCU > def.PartitionWCU:
		return o, usageError(errors.New("the limit flags can only lower DynamoDB's limits"))
	}
	return o, nil
}

func (a *app) runPlan(cmd *cobra.Command, _ []string) (err error) {
	// The first stop signal ends the read; a plan has nothing to save.
	ctx, cancel := a.cancelOnStop(cmd.Context())
	defer cancel()
	rep := a.newReport("plan")
	defer func() { err = a.finishReport(rep, err) }()

	opts, err := a.planOptions()
	if err != nil {
		return err
	}
	if s := a.v.GetString("sink"); s != "migrate" && s != "import" {
		return usageError(fmt.Errorf("--sink must be migrate or import, not %q", s))
	}
	var slot string
	o, err := a.open(ctx, rep, preamble{conns: opts.Readers + 2, prepare: func(l *loaded) (err error) {
		slot, err = a.syncSlot(l.static.Table.Name)
		return err
	}})
	if err != nil {
		// The header names the table even when the mapping does not compile.
		return a.planMappingErrors(rep, rep.Table, err)
	}
	defer o.Close()
	l, src, p, dsn := o.l, o.src, o.plan, o.dsn

	tables, _ := mapping.SourceTables(l.cfg)
	schema := &mapping.Schema{DefaultSchema: l.cfg.Source.Schema}
	if schema.Tables, err = src.Introspect(ctx, tables); err != nil {
		return err
	}
	var target *plan.TargetInfo
	if !a.v.GetBool("no-target") {
		target = a.describeTarget(ctx, l, p.Table)
	}
	snap, err := src.Snapshot(ctx, source.SnapshotOptions{Readers: opts.Readers})
	if err != nil {
		return err
	}
	defer snap.Close()
	report, err := plan.Run(ctx, plan.Input{Plan: p, Schema: schema, Snapshot: snap, Target: target, Source: dsn.Identity()}, opts)
	if err != nil {
		if ctx.Err() != nil && cmd.Context().Err() == nil {
			return errors.New("plan interrupted")
		}
		return err
	}
	report.Sync, err = syncReadiness(ctx, src, p, schema.Tables, slot)
	if err != nil {
		return err
	}
	report.Incremental = plan.Incremental(p)
	if a.v.GetBool("reversible") {
		report.AddReversible(reverse.Analyze(p, schema), l.path)
	}
	if a.v.GetString("sink") == "import" {
		report.ForImport(p, a.v.GetFloat64("import-price"))
	}
	return a.planResult(rep, report)
}

// planMappingErrors reports a mapping that does not compile as a plan
// report with its errors as findings (exit 2); any other error is returned.
func (a *app) planMappingErrors(rep *report, table string, err error) error {
	fs, ok := plan.MappingErrors(err)
	if !ok {
		return err
	}
	return a.planResult(rep, plan.MappingReport(table, fs))
}

// planResult prints the report and maps its status to the exit code.
func (a *app) planResult(rep *report, r *plan.Report) error {
	rep.Result = r
	var werr error
	switch a.v.GetString("output") {
	case "json":
		werr = r.WriteJSON(a.stdout)
	case "markdown":
		werr = r.WriteMarkdown(a.stdout)
	default:
		if werr = r.WriteText(a.stdout); werr == nil {
			werr = r.WriteImportText(a.stdout)
		}
	}
	if werr != nil {
		return fmt.Errorf("writing the plan: %w", werr)
	}
	switch r.Status {
	case plan.StatusMappingErrors:
		return &exitError{code: exitUsage, err: planReported{fmt.Sprintf("plan: the mapping has errors (%d errors)", r.Counts.Errors)}}
	case plan.StatusDataErrors:
		return &exitError{code: exitPlanData, err: planReported{fmt.Sprintf("plan: the data breaks DynamoDB's hard limits (%d errors)", r.Counts.Errors)}}
	}
	return nil
}

// exitPlanData is plan's exit code when the data breaks a hard limit.
const exitPlanData = 3

// planReported is an error whose findings are already printed.
type planReported struct{ msg string }

func (e planReported) Error() string        { return e.msg }
func (e planReported) Is(target error) bool { return target == errReported }

// describeTarget learns what it can about the target table: whether it
// exists, its provisioned write capacity, its local indexes and how it
// differs from the mapping. Failure is not an error; the plan says so.
func (a *app) describeTarget(ctx context.Context, l *loaded, ts *mapping.TableSchema) *plan.TargetInfo {
	info := &plan.TargetInfo{Checked: true}
	ctx, cancel := context.WithTimeout(ctx, targetTimeout)
	defer cancel()
	client, err := a.dynamo(ctx, l, 2)
	if err != nil {
		info.Error = err.Error()
		return info
	}
	api := briefTable{client}
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(ts.Name)})
	var nf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		return info
	case err != nil:
		info.Error = err.Error()
		return info
	}
	info.Exists = true
	for _, ix := range out.Table.LocalSecondaryIndexes {
		info.LocalIndexes = append(info.LocalIndexes, aws.ToString(ix.IndexName))
	}
	st, err := sink.DescribeTable(ctx, api, ts)
	if err != nil {
		info.Error = err.Error()
		return info
	}
	info.ProvisionedWrite = st.ProvisionedWrite
	info.Differences = st.Differences
	return info
}

// briefTable describes with two attempts at most, 100 ms apart at most,
// instead of the client's retries: an unreachable endpoint should be
// reported at once, not after minutes of back-off. Two, not one: the SDK
// sends a POST once on its own, and a describe sent on a kept-alive
// connection the endpoint has just closed would fail the target check.
type briefTable struct{ *dynamodb.Client }

func (c briefTable) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return c.Client.DescribeTable(ctx, in, append(opts, func(o *dynamodb.Options) {
		o.Retryer = retry.AddWithMaxBackoffDelay(retry.AddWithMaxAttempts(retry.NewStandard(), 2), 100*time.Millisecond)
	})...)
}
