package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
)

func (a *app) tableCommand() *cobra.Command {
	table := &cobra.Command{
		Use:   "table",
		Short: "Manage the target DynamoDB table",
	}
	create := &cobra.Command{
		Use:   "create",
		Short: "Create the table with its GSIs, LSIs and billing mode; wait for ACTIVE",
		Long: `Creates the table the mapping describes (key schema, global and local
secondary indexes, billing mode, TTL) and waits until it is ACTIVE. When the
table exists with the same keys and indexes it says so and succeeds; when it
differs it fails and lists every difference.

Before it creates anything it checks the whole mapping as plan does, against
the source's tables when a source DSN is set (mapping, --source-dsn or
DYNAFOLD_SOURCE_DSN): a mapping error plan reports (exit 2) is refused, and a
finding acknowledged in lint.ignore is said on stderr. --no-source skips the
source (then only what needs no source is checked).`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{outputsAnnotation: "text,json"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep := a.newReport("table create")
			if s := a.v.GetString("state"); s != "" {
				return a.finishReport(rep, a.createStateTable(cmd.Context(), rep, s))
			}
			if e := a.v.GetString("state-endpoint"); e != "" {
				return a.finishReport(rep, usageError(fmt.Errorf("--state-endpoint %s is where --state creates the sync state table; without --state there is none to create", sink.RedactEndpoint(e))))
			}
			return a.finishReport(rep, a.createTable(cmd, rep))
		},
	}
	create.Flags().Duration("wait", 5*time.Minute, "how long to wait for the table to become ACTIVE")
	create.Flags().String("state", "", "create the sync state table TABLE (or dynamodb://TABLE) instead of the mapping's table: key pk (S), on-demand; --config, or --endpoint and --region, say where")
	addStateEndpointFlag(create.Flags())
	create.Flags().Bool("no-source", false, "do not connect to the source: check the mapping only as far as it can be without the source's tables")
	table.AddCommand(create, a.tableImportCommand())
	return table
}

func (a *app) createTable(cmd *cobra.Command, rep *report) error {
	l, err := a.load()
	if err != nil {
		return err
	}
	// The whole mapping, against the source's tables when there is a
	// source to read: what plan would refuse (exit 2) is refused before
	// anything exists.
	checked := l.static
	switch {
	case a.v.GetBool("no-source"):
	case l.cfg.Source.DSN == "":
		fmt.Fprintln(a.console, "dynafold: no source DSN: the mapping is checked only as far as it can be without the source's tables (give --source-dsn, or --no-source to say so)")
	default:
		l.schemaOnly = true // variables bind row filters; no row is read
		src, full, err := a.connect(cmd.Context(), l, 2)
		if err != nil {
			return err
		}
		src.Close()
		checked = full
	}
	if err := a.lintGate(l, checked); err != nil {
		return err
	}
	rep.Table = l.static.Table.Name
	client, err := a.dynamo(cmd.Context(), l, 2)
	if err != nil {
		return err
	}
	res, err := sink.CreateTable(cmd.Context(), client, l.static.Table, a.v.GetDuration("wait"))
	if err != nil {
		if errors.Is(err, sink.ErrTableMismatch) {
			return fmt.Errorf("table %s exists but %w", l.static.Table.Name, err)
		}
		return err
	}
	rep.Result = tableResult(l.static.Table, res)
	a.printTable(l.static.Table, res)
	return nil
}

// tableResult is what table create reports with --output json and --report.
func tableResult(t *mapping.TableSchema, res *sink.CreateResult) map[string]any {
	return map[string]any{
		"table": t.Name, "created": res.Created, "ttl": res.TTL, "stream": res.State.Stream,
		"key": t.Describe(), "indexes": indexLines(t), "notes": res.State.Notes,
	}
}

func (a *app) printTable(t *mapping.TableSchema, res *sink.CreateResult) {
	switch a.v.GetString("output") {
	case "json":
		writeJSON(a.stdout, tableResult(t, res))
		return
	}
	if res.Created {
		fmt.Fprintf(a.stdout, "created table %s: %s, %s\n", t.Name, t.Describe(), t.Billing)
	} else {
		fmt.Fprintf(a.stdout, "table %s exists and matches the mapping: %s\n", t.Name, t.Describe())
	}
	for _, l := range indexLines(t) {
		fmt.Fprintf(a.stdout, "  %s\n", l)
	}
	for _, n := range res.State.Notes {
		fmt.Fprintf(a.stdout, "  note: %s\n", n)
	}
	if res.TTL != "" {
		fmt.Fprintf(a.stdout, "  TTL: %s\n", res.TTL)
	}
	if res.State.Stream != "" {
		fmt.Fprintf(a.stdout, "  stream: %s\n", res.State.Stream)
	}
}

func indexLines(t *mapping.TableSchema) []string {
	var out []string
	for _, ix := range t.Indexes {
		kind := "GSI"
		if !ix.Global {
			kind = "LSI"
		}
		key := fmt.Sprintf("%s(%s)", ix.PK.Name, ix.PK.Type)
		if ix.SK != nil {
			key += fmt.Sprintf(", %s(%s)", ix.SK.Name, ix.SK.Type)
		}
		out = append(out, fmt.Sprintf("%s %s: %s, projection %s", kind, ix.Name, key, ix.Projection))
	}
	return out
}
