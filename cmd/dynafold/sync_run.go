package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynafold/dynafold/cdc"
	"github.com/dynafold/dynafold/metrics"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/shadow"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/source/drivers"
	"github.com/dynafold/dynafold/statestore"
)

// syncRun is what one `dynafold sync` opens before the engine runs, in
// the order it opens them: the preamble (mapping, source, plan), the
// state and its lease, the change source, the table and the service's
// observability. close releases them in reverse.
type syncRun struct {
	a       *app
	rep     *report
	o       *opened
	readers int
	writers int
	slot    string
	svc     syncService

	state      statestore.Store
	gate       func() error
	leased     cdc.Lease
	indexCache int

	tables  map[source.TableRef]*source.Table
	changes source.ChangeSource
	reader  cdc.CurrentReader

	client *dynamodb.Client
	writer *sink.DynamoWriter
	obs    *observability
	live   *cdc.Live
	series *metrics.Sync

	shadowRun  *shadow.Runner
	stopShadow func() []shadow.Counts

	closers []func()
}

func (r *syncRun) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// openSync runs sync's preamble and opens its state under its lease. The
// returned run is closed by the caller, also when err is set.
func (a *app) openSync(ctx context.Context, rep *report) (*syncRun, error) {
	r := &syncRun{a: a, rep: rep, readers: a.v.GetInt("concurrency"), writers: a.v.GetInt("writers")}
	o, err := a.open(ctx, rep, preamble{conns: r.readers + 6,
		flags: func() (err error) {
			if err := a.checkMigrateFlags(r.readers, r.writers); err != nil {
				return err
			}
			r.svc, err = a.checkSyncServiceFlags()
			return err
		},
		prepare: func(l *loaded) (err error) {
			r.slot, err = a.syncSlot(l.static.Table.Name)
			return err
		},
		explain: func(l *loaded, err error) error {
			if stop := a.explainSyncStop(ctx, l, err); stop != nil {
				rep.Result = &cdc.Summary{Phase: "stopped", SchemaChanges: []cdc.SchemaFinding{stop.Finding}}
				return usageError(stop)
			}
			return err
		}})
	if err != nil {
		return nil, err
	}
	r.o = o
	r.closers = append(r.closers, o.Close)
	table := o.plan.Table.Name
	if r.state, err = a.openSyncState(ctx, o.l, a.syncStatePath(table), table); err != nil {
		return r, err
	}
	r.closers = append(r.closers, func() { r.state.Close() })
	rep.Checkpoint = r.state.Where()
	lease, err := a.syncLease(r.state)
	if err != nil {
		return r, err
	}
	// The row index is kept in memory only in front of DynamoDB: a local
	// bbolt read costs about what a cache miss does.
	if lease != nil {
		r.gate, r.leased = lease.Check, lease
		r.indexCache = a.v.GetInt("index-cache")
		if r.indexCache > 0 && os.Getenv("GOMEMLIMIT") == "" {
			// The cache is held on purpose, not working memory: the soft
			// limit's headroom is for the rest. Without this, an index
			// in memory near the limit makes the collector run back to
			// back (figures: docs/performance.md, the state in DynamoDB).
			debug.SetMemoryLimit(memoryLimit + int64(r.indexCache)*statestore.CacheRowBudget)
		}
	}
	return r, nil
}

// openChanges opens the change source and checks that the source can be
// followed: the mapping's tables, the server's settings, its retention.
func (r *syncRun) openChanges(ctx context.Context) error {
	a, src, plan := r.a, r.o.src, r.o.plan
	var err error
	if r.tables, err = introspectAll(ctx, src, r.o.l.cfg); err != nil {
		return err
	}
	if err := cdc.Unsupported(plan, r.tables); err != nil {
		return usageError(err)
	}
	r.changes, err = drivers.OpenChangeSource(src, drivers.ChangeOptions{
		Slot: r.slot, ServerID: a.v.GetUint32("server-id"), Table: plan.Table.Name, HeartbeatTable: a.v.GetString("heartbeat-table"),
	})
	if err != nil {
		return usageError(err)
	}
	r.closers = append(r.closers, func() { r.changes.Close() })
	probs, err := cdc.Check(ctx, plan, r.tables, r.changes)
	if err != nil {
		return err
	}
	if len(probs) > 0 {
		return usageError(problemsError(probs))
	}
	if my, ok := r.changes.(drivers.Replica); ok {
		note, err := my.Retention(ctx)
		if err != nil {
			return err
		}
		a.log.Warn("binlog retention: "+note, "server_id", my.ServerID())
	}
	reader, ok := src.(cdc.CurrentReader)
	if !ok {
		return usageError(fmt.Errorf("the %s source cannot read its current state for live sync", src.Driver()))
	}
	r.reader = reader
	return nil
}

// openTarget opens the table's writer (under the lease's gate), the
// service's health checks and metrics, and the shadow comparisons.
func (r *syncRun) openTarget(ctx context.Context) error {
	a, plan := r.a, r.o.plan
	var err error
	if r.client, r.writer, err = a.gatedTableWriter(ctx, r.o.l, plan, r.writers, r.gate); err != nil {
		return err
	}
	if r.obs, err = a.observe(plan.Table.Name); err != nil {
		return err
	}
	r.closers = append(r.closers, r.obs.close)
	writer := r.writer
	r.obs.health.AddCheck(func() (bool, string) {
		if writer.Waiting() {
			return false, "DynamoDB does not accept connections; writes wait for it"
		}
		return true, ""
	})
	r.live = cdc.NewLive()
	if r.obs.reg != nil {
		live := r.live
		r.series = metrics.NewSync(r.obs.reg, plan.Table.Name, metrics.SyncSources{
			Lag:            live.LagSeconds,
			Behind:         func() float64 { return float64(live.BehindBytes()) },
			Throttled:      func() float64 { return float64(writer.Stats().Throttled) },
			RequestRetries: func() float64 { return float64(writer.Stats().Retried) },
		})
	}
	r.shadowRun, r.stopShadow, err = a.startShadow(ctx, r.o.l, r.o.dsn, r.slot, plan, r.live, r.client, r.obs)
	return err
}

// job is the engine's job: what it reads and writes.
func (r *syncRun) job() cdc.Job {
	a, src, plan, dsn := r.a, r.o.src, r.o.plan, r.o.dsn
	readers := r.readers
	return cdc.Job{
		Plan: plan, Tables: r.tables, Changes: r.changes, Reader: r.reader, Writer: r.writer,
		Snapshot: func(ctx context.Context, id string) (source.Snapshot, error) {
			return src.Snapshot(ctx, source.SnapshotOptions{Readers: readers, Import: id})
		},
		State: r.state, Fingerprint: r.rep.Fingerprint, Identity: dsn.Identity(), RunID: r.rep.RunID,
		SourceTransient: drivers.Transient,
		Prune: func(ctx context.Context) (int64, error) {
			return a.pruneAll(ctx, src, plan, r.client, readers, dsn.Identity())
		},
	}
}

// options are the engine's options, from the flags.
func (r *syncRun) options(progress pipeline.Progress) cdc.Options {
	a := r.a
	rejectPath := a.rejectFile(r.o.plan.Table.Name)
	return cdc.Options{
		Load: pipeline.Options{Readers: r.readers, Writers: r.writers, PageSize: a.v.GetInt("page-size"),
			RejectFile: rejectPath, Grace: a.v.GetDuration("grace"), Progress: progress,
			FlushEvery: a.v.GetDuration("checkpoint-every")},
		Writers: r.writers, Readers: roundReaders(r.readers), RoundChanges: a.v.GetInt("round-changes"), UntilCaughtUp: a.v.GetBool("until-caught-up"),
		Force: a.v.GetBool("force"), Stop: a.stop, Grace: a.v.GetDuration("grace"),
		Status: a.syncStatus(progress), RejectFile: rejectPath, Logger: a.log, Fence: a.v.GetDuration("fence"),
		GiveUpAfter: a.v.GetDuration("give-up-after"), OnSourceReset: a.v.GetString("on-source-reset"),
		OnSchemaChange: a.v.GetString("on-schema-change"),
		HeartbeatEvery: a.v.GetDuration("heartbeat-every"), WarnRetainedWAL: r.svc.warnRetained,
		Metrics: r.series, Health: r.obs.health, Live: r.live, Lease: r.leased,
		IndexCache: r.indexCache,
	}
}
