package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/export"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
)

func (a *app) tableImportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Create the table from an export with DynamoDB ImportTable; wait and report",
		Long: `Starts a DynamoDB ImportTable job that creates the mapping's table (keys,
GSIs, billing and attribute definitions, as table create would) from the
files 'dynafold export' wrote under --from s3://bucket/prefix/, then waits,
showing progress, and reports the import's status, items processed and
imported, and errors (with the CloudWatch log group that lists them).
ImportTable creates new tables only and cannot create local secondary
indexes: an existing table or a mapping with LSIs is refused before
anything starts. It runs on AWS only; no local emulator implements it.`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{outputsAnnotation: "text,json"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep := a.newReport("table import")
			return a.finishReport(rep, a.importTable(cmd, rep))
		},
	}
	cmd.Flags().String("from", "", "the export: s3://bucket/prefix/ (as given to export --to)")
	cmd.Flags().Duration("poll", 15*time.Second, "how often to ask for the import's progress")
	cmd.Flags().Bool("no-wait", false, "start the import and return without waiting")
	return cmd
}

func (a *app) importTable(cmd *cobra.Command, rep *report) error {
	ctx := cmd.Context()
	scheme, bucket, prefix, err := export.Parse(a.v.GetString("from"))
	if err != nil || scheme != "s3" {
		return usageError(fmt.Errorf("--from must be the s3://bucket/prefix/ an export wrote (ImportTable reads only S3)"))
	}
	if a.v.GetDuration("poll") <= 0 {
		return usageError(fmt.Errorf("--poll must be positive, not %s", a.v.GetDuration("poll")))
	}
	l, err := a.load()
	if err != nil {
		return err
	}
	if err := a.lintGate(l, l.static); err != nil {
		return err
	}
	t := l.static.Table
	rep.Table = t.Name
	in, err := sink.ImportInput(t, bucket, prefix+export.DataDir)
	if errors.Is(err, sink.ErrImportLSI) {
		return usageError(fmt.Errorf("table %s: %w; create the table with 'dynafold table create' and load it with 'dynafold migrate' instead", t.Name, err))
	}
	if err != nil {
		return err
	}
	client, err := a.dynamo(ctx, l, 2)
	if err != nil {
		return err
	}
	st, err := sink.DescribeTable(ctx, client, t)
	if err != nil {
		return err
	}
	if st.Exists {
		return usageError(fmt.Errorf("table %s exists: ImportTable creates new tables only; delete it first, or load it with 'dynafold migrate'", t.Name))
	}
	out, err := client.ImportTable(ctx, in)
	if err != nil {
		return fmt.Errorf("starting the import of s3://%s/%s into %s: %w", bucket, aws.ToString(in.S3BucketSource.S3KeyPrefix), t.Name, err)
	}
	d := out.ImportTableDescription
	arn := aws.ToString(d.ImportArn)
	fmt.Fprintf(a.console, "dynafold: import %s started: table %s from s3://%s/%s\n", arn, t.Name, bucket, aws.ToString(in.S3BucketSource.S3KeyPrefix))
	if !a.v.GetBool("no-wait") {
		d, err = sink.WaitImport(ctx, client, arn, a.v.GetDuration("poll"), func(p *types.ImportTableDescription) {
			fmt.Fprintf(a.console, "dynafold: import %s: %s, %d items processed, %d imported, %d errors\n",
				t.Name, p.ImportStatus, p.ProcessedItemCount, p.ImportedItemCount, p.ErrorCount)
		})
		if err != nil {
			return err
		}
	}
	return a.reportImport(rep, t, arn, d)
}

// reportImport prints how the import ended and maps it to the exit.
func (a *app) reportImport(rep *report, t *mapping.TableSchema, arn string, d *types.ImportTableDescription) error {
	res := map[string]any{
		"table": t.Name, "import_arn": arn, "status": string(d.ImportStatus),
		"items_processed": d.ProcessedItemCount, "items_imported": d.ImportedItemCount, "errors": d.ErrorCount,
		"cloudwatch_log_group": aws.ToString(d.CloudWatchLogGroupArn),
		"failure_code":         aws.ToString(d.FailureCode), "failure_message": aws.ToString(d.FailureMessage),
	}
	rep.Result = res
	if a.v.GetString("output") == "json" {
		writeJSON(a.stdout, res)
	} else {
		fmt.Fprintf(a.stdout, "import %s: %s\n  items processed %d, imported %d, errors %d\n", t.Name, d.ImportStatus, d.ProcessedItemCount, d.ImportedItemCount, d.ErrorCount)
		if d.ErrorCount > 0 || d.ImportStatus == types.ImportStatusFailed {
			fmt.Fprintf(a.stdout, "  CloudWatch log group: %s\n", aws.ToString(d.CloudWatchLogGroupArn))
		}
		if d.FailureCode != nil {
			fmt.Fprintf(a.stdout, "  failure: %s: %s\n", aws.ToString(d.FailureCode), aws.ToString(d.FailureMessage))
		}
		if t.TTLAttribute != "" && d.ImportStatus == types.ImportStatusCompleted {
			fmt.Fprintf(a.stdout, "  TTL is not part of an import: run 'dynafold table create' to enable it on %s\n", t.TTLAttribute)
		}
	}
	switch {
	case a.v.GetBool("no-wait"):
		return nil
	case d.ImportStatus != types.ImportStatusCompleted:
		return fmt.Errorf("import %s ended %s", arn, d.ImportStatus)
	case d.ErrorCount > 0:
		return &exitError{code: exitRejected, err: fmt.Errorf("import completed with %d items in error; see CloudWatch log group %s", d.ErrorCount, aws.ToString(d.CloudWatchLogGroupArn))}
	}
	return nil
}
