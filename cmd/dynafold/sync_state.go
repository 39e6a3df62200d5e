package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/pflag"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/statestore"
)

// addStateFlags adds where sync keeps its state.
func addStateFlags(f *pflag.FlagSet) {
	f.String("state", "", "where sync keeps its state: dynamodb://TABLE (shared, with a lease; env DYNAFOLD_STATE), or local files (default; see --checkpoint)")
	f.Duration("lease-duration", 10*time.Second, "with a shared --state: how long the lease holds without renewal (renewed every third of it); a standby takes over this long after the holder stops")
	f.String("sync-name", "", "with --state dynamodb://: the name this sync's items are kept under in the state table (default: the target table's name)")
	addStateEndpointFlag(f)
}

// addStateEndpointFlag adds --state-endpoint.
func addStateEndpointFlag(f *pflag.FlagSet) {
	f.String("state-endpoint", "", "with --state dynamodb://: the DynamoDB endpoint URL of the state table (env DYNAFOLD_STATE_ENDPOINT; default: the target's, --endpoint or target.endpoint)")
}

// stateClient builds the DynamoDB client of the state table: the target's
// region and credentials, at --state-endpoint when it is set, else at the
// target's endpoint. The insecure-endpoint refusal applies to either.
func (a *app) stateClient(ctx context.Context, region, endpoint string) (*dynamodb.Client, error) {
	if e := a.v.GetString("state-endpoint"); e != "" {
		endpoint = e
	}
	client, err := sink.NewClient(ctx, sink.ClientOptions{Region: region, Endpoint: endpoint, MaxConns: 16, Logger: a.log,
		AllowInsecure: a.v.GetBool("allow-insecure-endpoint")})
	if err == nil {
		a.learnCredentials(ctx, client.Options().Credentials)
	}
	return client, err
}

// openSyncState opens where sync keeps its state: the state table named
// by --state dynamodb://TABLE (created on first use), or the local files
// at statePath.
func (a *app) openSyncState(ctx context.Context, l *loaded, statePath, target string) (statestore.Store, error) {
	return a.openState(ctx, l, statePath, target, true)
}

func (a *app) openState(ctx context.Context, l *loaded, statePath, target string, create bool) (statestore.Store, error) {
	table, shared, err := statestore.ParseURL(a.v.GetString("state"))
	if err != nil {
		return nil, usageError(err)
	}
	if !shared {
		if s := a.v.GetString("state"); s != "" {
			return nil, usageError(fmt.Errorf("--state %q: want dynamodb://TABLE, or no --state for local files (--checkpoint)", s))
		}
		if e := a.v.GetString("state-endpoint"); e != "" {
			return nil, usageError(fmt.Errorf("--state-endpoint %s names where the state table is, but there is none: add --state dynamodb://TABLE, or drop --state-endpoint for local files", sink.RedactEndpoint(e)))
		}
		return statestore.OpenFile(statePath)
	}
	if a.v.GetString("checkpoint") != "" {
		return nil, usageError(fmt.Errorf("--checkpoint names local state files; with --state %s the state is kept in that table (drop one of the two)", a.v.GetString("state")))
	}
	client, err := a.stateClient(ctx, l.cfg.Target.Region, l.cfg.Target.Endpoint)
	if err != nil {
		return nil, err
	}
	if !create {
		return statestore.NewDynamo(client, table, a.syncName(target))
	}
	created, err := statestore.CreateTable(ctx, client, table, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	if created {
		fmt.Fprintf(a.console, "dynafold: created the sync state table %s (on-demand; dynafold table create --state %s creates it ahead)\n", table, table)
	}
	return statestore.NewDynamo(client, table, a.syncName(target))
}

// syncName is --sync-name, or the target table's name.
func (a *app) syncName(target string) string {
	if n := a.v.GetString("sync-name"); n != "" {
		return n
	}
	return target
}

// removeSyncState deletes sync's state and says what it removed.
func (a *app) removeSyncState(ctx context.Context, l *loaded, statePath, target string) ([]string, error) {
	if _, shared, err := statestore.ParseURL(a.v.GetString("state")); err != nil || !shared {
		if err != nil {
			return nil, usageError(err)
		}
		return statestore.RemoveFiles(statePath)
	}
	st, err := a.openState(ctx, l, statePath, target, false)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Remove(ctx)
}

// createStateTable is table create --state: the sync state table, at the
// mapping's (or --endpoint's, --region's) DynamoDB, or at --state-endpoint.
func (a *app) createStateTable(ctx context.Context, rep *report, url string) error {
	table, shared, err := statestore.ParseURL(url)
	if err != nil {
		return usageError(err)
	}
	if !shared {
		table = url
	}
	region, endpoint := a.v.GetString("region"), a.v.GetString("endpoint")
	if a.v.GetString("config") != "" {
		l, err := a.load()
		if err != nil {
			return err
		}
		region, endpoint = l.cfg.Target.Region, l.cfg.Target.Endpoint
	}
	client, err := a.stateClient(ctx, region, endpoint)
	if err != nil {
		return err
	}
	created, err := statestore.CreateTable(ctx, client, table, a.v.GetDuration("wait"))
	if err != nil {
		return err
	}
	rep.Table = table
	rep.Result = map[string]any{"state_table": table, "created": created}
	switch {
	case a.v.GetString("output") == "json":
		writeJSON(a.stdout, rep.Result)
	case created:
		fmt.Fprintf(a.stdout, "created the sync state table %s: key pk (S), on-demand\n", table)
	default:
		fmt.Fprintf(a.stdout, "the sync state table %s exists\n", table)
	}
	return nil
}

// gatedSender sends the writer's requests only while gate allows.
type gatedSender struct {
	guard *sink.ReachGuard
	gate  func() error
}

func (g gatedSender) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	if err := g.gate(); err != nil {
		return nil, err
	}
	return g.guard.BatchWriteItem(ctx, in, optFns...)
}

func (g gatedSender) SendBody(ctx context.Context, table string, pending []*mapping.Item, body *sink.Body) (*dynamodb.BatchWriteItemOutput, error) {
	if err := g.gate(); err != nil {
		return nil, err
	}
	return g.guard.SendBody(ctx, table, pending, body)
}

// syncLease is the lease of a shared state (nil for local files), which
// every write of the state and of the table asks first.
func (a *app) syncLease(state statestore.Store) (*statestore.Lease, error) {
	d, ok := state.(*statestore.Dynamo)
	if !ok {
		return nil, nil
	}
	dur := a.v.GetDuration("lease-duration")
	if dur < time.Second {
		return nil, usageError(fmt.Errorf("--lease-duration must be at least 1s, not %s", dur))
	}
	host, _ := os.Hostname()
	owner := fmt.Sprintf("%s:%d:%04x", host, os.Getpid(), rand.Uint32()&0xffff)
	return d.Lease(owner, dur, a.v.GetDuration("fence")), nil
}
