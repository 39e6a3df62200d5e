package cdc

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/statestore"
)

// Phases of a sync.
const (
	// phaseLoad: the slot exists and the initial load is under way (its
	// own checkpoint holds the shard positions).
	phaseLoad = "load"
	// phaseStream: the table is loaded; changes are applied from the
	// confirmed position on.
	phaseStream = "stream"
)

// State is the sync checkpoint (--checkpoint, .dynafold/<table>.sync.json).
type State struct {
	Version     int    `json:"version"`
	Table       string `json:"table"`
	Fingerprint string `json:"fingerprint"`
	Source      string `json:"source"`
	Phase       string `json:"phase"`
	// Start is where the change stream began (the slot's consistent point).
	Start source.Position `json:"start"`
	// Confirmed is the position through which every change is applied and
	// acknowledged.
	Confirmed source.Position `json:"confirmed"`
	// Server is the source server's identity
	// (source.ChangeSource.Identity) the positions belong to.
	Server string `json:"server,omitempty"`
	// Resnapshot is set while a resnapshot's load and prune are under way;
	// Resnapshots counts them.
	Resnapshot  bool `json:"resnapshot,omitempty"`
	Resnapshots int  `json:"resnapshots,omitempty"`
	// Running is set while a sync runs and cleared when it stops cleanly:
	// found set at start, the last sync died with writes possibly in
	// flight (see Options.Fence).
	Running *Running `json:"running,omitempty"`
	// Shapes are the mapped tables' definitions as sync last judged them
	// (cdc/schema.go), by table: what a schema change is compared with.
	Shapes map[string]*source.TableShape `json:"shapes,omitempty"`
	// Mapped are the columns the mapping read from each table when its
	// shape was recorded: what a sync that cannot load its mapping any
	// more judges the change by (StoppedBy).
	Mapped  map[string][]string `json:"mapped,omitempty"`
	Created time.Time           `json:"created"`
	Updated time.Time           `json:"updated"`
	Totals  Counters            `json:"totals"`
}

// Running identifies the sync that holds the state.
type Running struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// Counters add up what sync applied, over this run or every run.
type Counters struct {
	Transactions  int64 `json:"transactions"`
	Changes       int64 `json:"changes"`
	RowsDerived   int64 `json:"rows_rederived"`
	ItemsWritten  int64 `json:"items_written"`
	ItemsDeleted  int64 `json:"items_deleted"`
	RowsRejected  int64 `json:"rows_rejected"`
	Rounds        int64 `json:"rounds"`
	LoadedItems   int64 `json:"loaded_items,omitempty"`
	ChangesFanned int64 `json:"changes_fanned_out"`
	// SchemaChanges counts the schema changes of mapped tables sync met;
	// Rederives the re-derives they caused.
	SchemaChanges int64 `json:"schema_changes"`
	Rederives     int64 `json:"rederives"`
}

func (c *Counters) add(o Counters) {
	c.Transactions += o.Transactions
	c.Changes += o.Changes
	c.RowsDerived += o.RowsDerived
	c.ItemsWritten += o.ItemsWritten
	c.ItemsDeleted += o.ItemsDeleted
	c.RowsRejected += o.RowsRejected
	c.Rounds += o.Rounds
	c.LoadedItems += o.LoadedItems
	c.ChangesFanned += o.ChangesFanned
	c.SchemaChanges += o.SchemaChanges
	c.Rederives += o.Rederives
}

// loadState reads the state the store holds; nil when there is none.
func loadState(ctx context.Context, store statestore.Store) (*State, error) {
	b, err := store.ReadState(ctx)
	if err != nil || b == nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("sync checkpoint %s is not valid: %w", store.Where(), err)
	}
	return &s, nil
}

// save writes the state to the store, which makes the row index durable
// first.
func (s *State) save(ctx context.Context, store statestore.Store) error {
	s.Updated = time.Now().UTC()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return store.WriteState(ctx, append(b, '\n'))
}
