package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	tabledesign "github.com/dynafold/dynafold/design"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/plan"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
)

// designArtifact is one of design's subcommands: it writes one artifact,
// and takes the flags of what that artifact shows.
type designArtifact struct {
	name, short string
	// samples: the artifact shows sample items (--sample).
	samples bool
	// importable: the artifact defines the table, which an import can
	// create (--import-from).
	importable bool
	// measured: the artifact shows plan's measurements (--measure-sample).
	measured bool
	write    func(m *tabledesign.Model, w *bytes.Buffer) error
}

var designArtifacts = []designArtifact{
	{name: "workbench", short: "Write a NoSQL Workbench data model (JSON): keys, GSIs, one facet per entity, sample items", samples: true,
		write: func(m *tabledesign.Model, w *bytes.Buffer) error { return m.WriteWorkbench(w, time.Now()) }},
	{name: "cloudformation", short: "Write the table as a CloudFormation template (YAML, AWS::DynamoDB::Table)", importable: true,
		write: func(m *tabledesign.Model, w *bytes.Buffer) error { return m.WriteCloudFormation(w) }},
	{name: "cdk", short: "Write the table as a TypeScript CDK construct (aws-cdk-lib v2)", importable: true,
		write: func(m *tabledesign.Model, w *bytes.Buffer) error { return m.WriteCDK(w) }},
	{name: "terraform", short: "Write the table as a Terraform aws_dynamodb_table resource", importable: true,
		write: func(m *tabledesign.Model, w *bytes.Buffer) error { return m.WriteTerraform(w) }},
	{name: "html", short: "Write one self-contained HTML page: items by partition key, each index, item sizes, hot keys, access patterns", samples: true, measured: true,
		write: func(m *tabledesign.Model, w *bytes.Buffer) error { return m.WriteHTML(w) }},
}

func (a *app) designCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "design",
		Short: "Write the single-table design for NoSQL Workbench, CloudFormation, CDK, Terraform or a web page",
		Long: `Writes the design the mapping describes in the forms DynamoDB people use: a
NoSQL Workbench data model, the table as CloudFormation, CDK or Terraform
defines it (keys, GSIs and LSIs with projections, billing, TTL: the table
table create makes), and one self-contained HTML page.

Sample items (workbench, html) are built from the first --sample rows of
each entity by the builder migrate uses; the HTML page also shows plan's
measurements (item sizes, hot keys), which read the whole source.
--no-source writes every artifact without them. --import-from
(cloudformation, cdk, terraform) adds the import of a dynafold export to
the table's definition; it acts only when the table is created.`,
		Args: cobra.NoArgs,
	}
	pf := cmd.PersistentFlags()
	pf.Bool("no-source", false, "do not read the source: no sample items and no measurements")
	pf.String("out", "", "write to this file instead of stdout")
	for _, art := range designArtifacts {
		sub := &cobra.Command{
			Use:   art.name,
			Short: art.short,
			Args:  cobra.NoArgs,
			RunE: func(c *cobra.Command, _ []string) error {
				rep := a.newReport("design " + c.Name())
				return a.finishReport(rep, a.runDesign(c, rep, art))
			},
		}
		f := sub.Flags()
		if art.samples {
			f.Int("sample", 5, "source rows per entity whose items are shown: the first ones, and as many of each sampled collection")
			f.StringSlice("sample-keys", nil, "item collections to sample instead of the access patterns' results: a partition key value of the table (CUSTOMER#ALFKI) or ATTR=VALUE for an index's partition key attribute (GSI1PK=EMPLOYEE#2); repeatable or comma-separated")
		}
		if art.importable {
			f.String("import-from", "", "a dynafold export, s3://bucket/prefix/, that creates the table by ImportTable")
		}
		if art.measured {
			f.Float64("measure-sample", 1, "fraction of rows plan measures for the size and hot-key charts")
		}
		cmd.AddCommand(sub)
	}
	return cmd
}

// designSampling reads the flags of what an artifact shows from the
// source: rows sampled per entity, and the measurement's options.
func (a *app) designSampling(art designArtifact) (perEntity int, measure *plan.Options, err error) {
	if art.samples {
		perEntity = a.v.GetInt("sample")
		if perEntity < 1 {
			return 0, nil, usageError(fmt.Errorf("--sample must be at least 1 row per entity, not %d", perEntity))
		}
	}
	if art.measured {
		f := a.v.GetFloat64("measure-sample")
		if f <= 0 || f > 1 {
			return 0, nil, usageError(fmt.Errorf("--measure-sample must be a fraction in (0, 1], not %g", f))
		}
		measure = &plan.Options{Sample: f, Readers: 2}
	}
	return perEntity, measure, nil
}

func (a *app) runDesign(cmd *cobra.Command, rep *report, art designArtifact) error {
	ctx, cancel := a.cancelOnStop(cmd.Context())
	defer cancel()
	perEntity, measure, err := a.designSampling(art)
	if err != nil {
		return err
	}
	sampleKeys := a.v.GetStringSlice("sample-keys")
	noSource := a.v.GetBool("no-source")
	load := a.loadForSource
	if noSource {
		load = a.load
	}
	l, err := load()
	if err != nil {
		return err
	}
	rep.Table = l.static.Table.Name
	p := l.static
	var src source.Source
	if !noSource {
		if src, p, err = a.connect(ctx, l, 4); err != nil {
			return err
		}
		defer src.Close()
	}
	if err := a.lintGate(l, p); err != nil {
		return err
	}
	// The artifacts are shared: they name the mapping file without the
	// machine's directories.
	wd, _ := os.Getwd()
	m := tabledesign.New(p, tabledesign.ConfigName(l.path, wd))
	if from := a.v.GetString("import-from"); art.importable && from != "" {
		if err := m.SetImport(from); err != nil {
			if errors.Is(err, sink.ErrImportLSI) {
				err = fmt.Errorf("table %s: %w; --import-from cannot be used with this mapping", p.Table.Name, err)
			}
			return usageError(err)
		}
	}
	// An artifact that shows neither samples nor measurements reads the
	// source only to check the mapping against it (above).
	if src != nil && (art.samples || art.measured) {
		opts := tabledesign.SampleOptions{PerEntity: perEntity}
		if art.samples {
			if opts.Collections, err = sampleCollections(p, sampleKeys); err != nil {
				return usageError(err)
			}
		}
		if err := a.readDesignSource(ctx, m, l, src, opts, measure); err != nil {
			return err
		}
	}
	return a.writeDesign(cmd.Name(), rep, art, m)
}

// readDesignSource reads the artifact's samples and measurements from a
// snapshot of the source, and says what it left out.
func (a *app) readDesignSource(ctx context.Context, m *tabledesign.Model, l *loaded, src source.Source, opts tabledesign.SampleOptions, measure *plan.Options) error {
	snap, err := src.Snapshot(ctx, source.SnapshotOptions{Readers: 2})
	if err != nil {
		return err
	}
	defer snap.Close()
	dsn, _ := l.dsn()
	if err := m.ReadSource(ctx, snap, l.schema, dsn.Identity(), opts, measure); err != nil {
		return err
	}
	for _, rerr := range m.Samples.Rejected {
		fmt.Fprintf(a.console, "dynafold: a sample row cannot become an item, left out: %v\n", rerr)
	}
	for _, c := range m.Samples.Collections {
		if c.Items == 0 && c.Value != "" {
			note := m.Samples.CappedNote()
			if note != "" {
				note = "; " + note
			}
			fmt.Fprintf(a.console, "dynafold: no sample item is in the collection of %s (%s = %q)%s\n", c.Name, c.PK, c.Value, note)
		}
	}
	return nil
}

// writeDesign writes the artifact to --out, or to stdout.
func (a *app) writeDesign(name string, rep *report, art designArtifact, m *tabledesign.Model) error {
	var buf bytes.Buffer
	if err := art.write(m, &buf); err != nil {
		return err
	}
	out := a.v.GetString("out")
	rep.Result = map[string]any{"artifact": name, "out": out, "sample_items": sampleCount(m)}
	if out == "" {
		_, err := a.stdout.Write(buf.Bytes())
		return err
	}
	// 0644, unlike every other file dynafold writes (internal/durable): a
	// design artifact is made to be shared, opened in NoSQL Workbench or
	// handed to reviewers. Its sample items come from source rows; an
	// operator who must not share them runs it with --no-source.
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the %s design: %w", name, err)
	}
	fmt.Fprintf(a.console, "dynafold: wrote %s\n", out)
	return nil
}

// sampleCollections are the collections whose items the samples show
// besides each entity's first rows: those --sample-keys names, else the
// access patterns' results; and each index's entries, so that a view of
// a sparse index shows items that are in it.
func sampleCollections(p *mapping.Plan, keys []string) ([]*tabledesign.Collection, error) {
	var out []*tabledesign.Collection
	if len(keys) > 0 {
		cs, err := tabledesign.SampleKeys(p, keys)
		if err != nil {
			return nil, err
		}
		out = cs
	} else {
		out = tabledesign.PatternCollections(p)
	}
	return append(out, tabledesign.IndexCollections(p)...), nil
}

// sampleCount is how many sample items the artifact shows (-1: none read).
func sampleCount(m *tabledesign.Model) int {
	if m.Samples == nil {
		return -1
	}
	return len(m.Samples.Items)
}
