package cdc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dynafold/dynafold/source"
)

// What a schema change that changed values without row events leads to
// (Options.OnSchemaChange).
const (
	SchemaRederive = "rederive"
	SchemaStop     = "stop"
)

// SilentDDL is a change source whose log does not carry DDL (PostgreSQL's
// pgoutput sends a table's columns before its next change, not the
// statement): sync compares the catalog with what it recorded when
// streaming starts, when it is caught up and every shapeCheckEvery, as
// well as whenever the log shows a table's definition again. A source
// whose log carries every statement (MySQL) is judged at the statement,
// where the log puts it.
type SilentDDL interface {
	SilentDDL()
}

// shapeCheckEvery is how often a silent-DDL source's catalog is compared
// with the recorded shapes while streaming.
const shapeCheckEvery = 30 * time.Second

// shaper is the change source's Shaper, or nil.
func (e *engine) shaper() source.Shaper {
	s, _ := e.job.Changes.(source.Shaper)
	return s
}

func (e *engine) silentDDL() bool {
	_, ok := e.job.Changes.(SilentDDL)
	return ok && e.shaper() != nil
}

// mappedTables are the tables sync streams, in a stable order.
func (e *engine) mappedTables() []source.TableRef {
	refs := make([]source.TableRef, 0, len(e.graph.needs))
	for _, n := range e.graph.needs {
		refs = append(refs, n.Table.Ref)
	}
	return refs
}

func (e *engine) need(ref source.TableRef) *source.TableNeed {
	for i := range e.graph.needs {
		if e.graph.needs[i].Table.Ref == ref {
			return &e.graph.needs[i]
		}
	}
	return nil
}

// recordShapes records the shapes of the mapped tables that have none
// recorded: when sync starts (the shapes the initial load reads) and for
// a state written before shapes were recorded.
func (e *engine) recordShapes(ctx context.Context) error {
	sh := e.shaper()
	if sh == nil {
		return nil
	}
	var missing []source.TableRef
	for _, ref := range e.mappedTables() {
		if e.state.Shapes[ref.String()] == nil {
			missing = append(missing, ref)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	now, err := sh.Shapes(ctx, missing)
	if err != nil {
		return fmt.Errorf("reading the definitions of the mapped tables: %w", err)
	}
	for _, ref := range missing {
		e.recordShape(ref, now[ref])
	}
	return nil
}

// recordShape records a table's shape and the columns the mapping reads
// from it; a table that is gone keeps its last shape.
func (e *engine) recordShape(ref source.TableRef, s *source.TableShape) {
	if s == nil {
		return
	}
	if e.state.Shapes == nil {
		e.state.Shapes = map[string]*source.TableShape{}
	}
	if e.state.Mapped == nil {
		e.state.Mapped = map[string][]string{}
	}
	e.state.Shapes[ref.String()] = s
	if n := e.need(ref); n != nil {
		e.state.Mapped[ref.String()] = slices.Clone(n.Columns)
	}
}

// schemaEvent is one table the log says may have changed: its statement,
// if the log carries it, and whether the log emptied it.
type schemaEvent struct {
	ref       source.TableRef
	ddl       *source.DDL
	truncated bool
	streaming bool
}

// checkShapes compares every mapped table with its recorded shape: for a
// source whose log does not carry DDL, at the start of streaming, when
// caught up and every so often.
func (e *engine) checkShapes(ctx context.Context, streaming bool) error {
	if !e.silentDDL() {
		return nil
	}
	var evs []schemaEvent
	for _, ref := range e.mappedTables() {
		evs = append(evs, schemaEvent{ref: ref, streaming: streaming})
	}
	return e.schemaChanged(ctx, evs)
}

// schemaChanged judges the tables the log says may have changed against
// their recorded shapes, and acts: goes on, re-derives the entities that
// read the tables whose values changed without row events, or stops.
// Sync has applied and confirmed everything before this point of the log
// and confirms nothing after it until this returns: a sync killed in a
// re-derive meets the change again when it resumes, and the new shapes
// are recorded only once the re-derive is done.
func (e *engine) schemaChanged(ctx context.Context, evs []schemaEvent) error {
	sh := e.shaper()
	if sh == nil {
		return e.legacySchemaStop(evs)
	}
	refs := make([]source.TableRef, 0, len(evs))
	for _, ev := range evs {
		if !slices.Contains(refs, ev.ref) {
			refs = append(refs, ev.ref)
		}
	}
	now, err := sh.Shapes(ctx, refs)
	if err != nil {
		return fmt.Errorf("reading the definitions of %v after a schema change: %w", refs, err)
	}
	var findings []SchemaFinding
	for _, ev := range evs {
		need := e.need(ev.ref)
		if need == nil {
			continue
		}
		findings = append(findings, classify(schemaInput{
			table: ev.ref.String(), mapped: need.Columns,
			was: e.state.Shapes[ev.ref.String()], now: now[ev.ref], ddl: ev.ddl, truncated: ev.truncated, streaming: ev.streaming,
			renamedTo: findRenamed(ctx, sh, e.state.Shapes[ev.ref.String()], now[ev.ref]),
		})...)
	}
	if err := e.actOn(ctx, findings); err != nil {
		return err
	}
	for _, ref := range refs {
		e.recordShape(ref, now[ref])
	}
	return e.save()
}

// actOn logs and counts the findings and does what the strongest says.
func (e *engine) actOn(ctx context.Context, findings []SchemaFinding) error {
	w, ok := worst(findings)
	if !ok {
		return nil
	}
	if w.Action == ActRederive && e.opts.OnSchemaChange == SchemaStop {
		for i := range findings {
			if findings[i].Action == ActRederive {
				findings[i].Action, findings[i].Fix = ActStop, fixRederiv
			}
		}
		w.Action, w.Fix = ActStop, fixRederiv
		w.What += " (--on-schema-change stop)"
	}
	var tables []source.TableRef
	sweep := false
	for _, f := range findings {
		e.log.Warn("schema change", "table", f.Table, "column", f.Column, "kind", f.Kind, "action", string(f.Action), "what", f.What)
		e.metrics.SchemaChange(string(f.Action))
		e.run.SchemaChanges++
		e.state.Totals.SchemaChanges++
		if f.Action == ActRederive {
			ref := e.refNamed(f.Table)
			if !slices.Contains(tables, ref) {
				tables = append(tables, ref)
			}
			sweep = sweep || f.Sweep
		}
	}
	if w.Action == ActStop {
		e.findings = append(e.findings, findings...)
		return &SchemaError{Finding: w}
	}
	if len(tables) == 0 {
		e.findings = append(e.findings, findings...)
		return nil
	}
	entities, rows, err := e.rederiveTables(ctx, tables, sweep)
	if err != nil {
		// Another change may have come while the rows were read again (a
		// mapped column dropped under the re-derive): a stop is said as
		// the stop it is.
		return e.explainStop(ctx, fmt.Errorf("re-deriving after a schema change of %v: %w", tables, err))
	}
	for i := range findings {
		if findings[i].Action == ActRederive {
			findings[i].Entities, findings[i].RowsRederived = entities, rows
		}
	}
	e.findings = append(e.findings, findings...)
	e.run.Rederives++
	e.state.Totals.Rederives++
	return nil
}

// refNamed is the mapped table whose String() is name.
func (e *engine) refNamed(name string) source.TableRef {
	for _, ref := range e.mappedTables() {
		if ref.String() == name {
			return ref
		}
	}
	return source.TableRef{Name: name}
}

// legacySchemaStop is what a change source that cannot read shapes gets:
// a stop at any schema change of a mapped table.
func (e *engine) legacySchemaStop(evs []schemaEvent) error {
	for _, ev := range evs {
		f := SchemaFinding{Table: ev.ref.String(), Kind: KindUnknownDDL, Action: ActStop, What: "may have changed, and this source cannot read table definitions", Fix: fixMapping}
		if ev.truncated {
			f.Kind, f.What = KindTableTruncated, "was truncated, and this source cannot read table definitions"
		}
		e.findings = append(e.findings, f)
		return &SchemaError{Finding: f}
	}
	return errors.New("a schema change with no table")
}

// explainGone is called when a read of the current state failed on a
// column or table that is not there (source.ErrDefinitionGone): DDL ran
// before the log delivered it. The tables are judged at once; a stop is
// returned as the stop it is, anything else leaves the read's error to
// be handled as it is (nothing is acted on or recorded here: the log's
// own event for the DDL comes next).
func (e *engine) explainGone(ctx context.Context, readErr error) error {
	if !errors.Is(readErr, source.ErrDefinitionGone) {
		return readErr
	}
	return e.explainStop(ctx, readErr)
}

// explainStop judges the tables after readErr and returns the stop a
// schema change makes, or readErr when there is none.
func (e *engine) explainStop(ctx context.Context, readErr error) error {
	sh := e.shaper()
	if sh == nil || errors.Is(readErr, context.Canceled) {
		return readErr
	}
	refs := e.mappedTables()
	now, err := sh.Shapes(ctx, refs)
	if err != nil {
		return readErr
	}
	var findings []SchemaFinding
	for _, ref := range refs {
		findings = append(findings, classify(schemaInput{table: ref.String(), mapped: e.need(ref).Columns,
			was: e.state.Shapes[ref.String()], now: now[ref], streaming: true,
			renamedTo: findRenamed(ctx, sh, e.state.Shapes[ref.String()], now[ref])})...)
	}
	if w, ok := worst(findings); ok && w.Action == ActStop {
		for _, f := range findings {
			e.log.Warn("schema change", "table", f.Table, "column", f.Column, "kind", f.Kind, "action", string(f.Action), "what", f.What)
			e.metrics.SchemaChange(string(f.Action))
		}
		e.run.SchemaChanges += int64(len(findings))
		e.state.Totals.SchemaChanges += int64(len(findings))
		e.findings = append(e.findings, findings...)
		return &SchemaError{Finding: w}
	}
	return readErr
}
