package main

import (
	"context"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/source"
)

// preamble is what a command that reads the source does before its own
// work, in one order for every command: load the mapping (its table goes
// in the report), lock the checkpoint, connect and compile the plan, stop
// on the mapping errors plan reports, and name the source and the
// fingerprint in the report. The fields say which steps a command takes.
type preamble struct {
	// conns is how many source connections the command may open.
	conns int
	// flags checks the command's flags once the mapping is loaded, so
	// that the report of a usage error names the table; a usage error.
	flags func() error
	// checkpoint, when set, is the name under .dynafold/ (after the
	// table's) of the checkpoint the run locks: one run per checkpoint,
	// refused before anything is opened.
	checkpoint string
	// lint stops on the errors plan reports (lintGate): commands that
	// write, and previews of them.
	lint bool
	// prepare runs before the source is connected, once the checkpoint
	// is held (export opens its destination there, sync names its slot).
	prepare func(*loaded) error
	// fingerprint is what the run's fingerprint covers beside the
	// source's identity (export: its destination); nil for nothing.
	fingerprint func() string
	// explain turns an error of connecting or compiling into the
	// command's own (sync's stops, plan's findings); nil keeps it.
	explain func(*loaded, error) error
}

// opened is what a preamble leaves: the mapping, the connected source and
// the compiled plan, and the locked checkpoint. Close releases them.
type opened struct {
	l          *loaded
	src        source.Source
	plan       *mapping.Plan
	dsn        source.DSN
	checkpoint string
	release    []func()
}

// Close closes the source and unlocks the checkpoint, in that order.
func (o *opened) Close() {
	for i := len(o.release) - 1; i >= 0; i-- {
		o.release[i]()
	}
	o.release = nil
}

// open runs the preamble p for the run rep reports. On an error, what it
// had opened is released, and the report holds what was known.
func (a *app) open(ctx context.Context, rep *report, p preamble) (_ *opened, err error) {
	l, err := a.loadForSource()
	if err != nil {
		if l != nil {
			// The mapping did not load, but --table named the table.
			rep.Table = l.cfg.Target.Table
		}
		return nil, err
	}
	rep.Table = l.static.Table.Name
	if p.flags != nil {
		if err := p.flags(); err != nil {
			return nil, usageError(err)
		}
	}
	o := &opened{l: l}
	defer func() {
		if err != nil {
			o.Close()
		}
	}()
	if p.checkpoint != "" {
		path, unlock, err := a.lockCheckpoint(l.static.Table.Name + p.checkpoint)
		if err != nil {
			return nil, err
		}
		o.checkpoint = path
		o.release = append(o.release, unlock)
	}
	if p.prepare != nil {
		if err := p.prepare(l); err != nil {
			return nil, err
		}
	}
	src, plan, err := a.connect(ctx, l, p.conns)
	if err != nil {
		if p.explain != nil {
			err = p.explain(l, err)
		}
		return nil, err
	}
	o.src, o.plan = src, plan
	o.release = append(o.release, func() { src.Close() })
	if p.lint {
		if err := a.lintGate(l, plan); err != nil {
			return nil, err
		}
	}
	o.dsn, _ = l.dsn()
	rep.Source = o.dsn.Identity()
	covers := o.dsn.Identity()
	if p.fingerprint != nil {
		covers += p.fingerprint()
	}
	rep.Fingerprint = plan.Fingerprint(covers)
	return o, nil
}

// observedPass returns a pipeline pass's options as migrate's: progress on
// the console and metrics on --metrics-addr, both started when the pass
// starts (given its checkpoint) and stopped as it ends; stop closes the
// metrics server after the run. retried, when set, is the writer's count
// of retried items for the metrics.
func (a *app) observedPass(table string, readers, writers int, dsn source.DSN, retried func() float64) (pass func(*checkpoint.FileStore) (pipeline.Options, func(), error), stop func()) {
	var obs *observability
	pass = func(store *checkpoint.FileStore) (pipeline.Options, func(), error) {
		var err error
		if obs, err = a.observe(table); err != nil {
			return pipeline.Options{}, nil, err
		}
		progress, restore := a.progress()
		progress = obs.runProgress(progress, retried)
		opts := a.runOptions(readers, writers, dsn, a.rejectFile(table), progress, func(si pipeline.StartInfo) {
			a.announceStart(store, store.Path(), si)
		})
		return opts, func() {
			restore()
			if progress != nil {
				progress.Close()
			}
		}, nil
	}
	return pass, func() {
		if obs != nil {
			obs.close()
		}
	}
}
