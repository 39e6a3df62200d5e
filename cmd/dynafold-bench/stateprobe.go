package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/statestore"
)

// stateProbe is what the state endpoint serves with nothing else running:
// sync's own row-index reads (statestore.Dynamo.Keys: consistent
// BatchGetItem, 100 keys a request, 8 in flight) of entries shaped like
// the benchmark's, so that a state run's rate can be read against the
// endpoint's ceiling rather than guessed.
type stateProbe struct {
	Rows       int     `json:"rows"`
	Reads      int     `json:"row_reads"`
	Seconds    float64 `json:"seconds"`
	KeysPerSec float64 `json:"row_reads_per_second"`
	// ListPerSec is the rate of sync's listing of the whole index
	// (statestore.Dynamo.ListKeys: a consistent parallel Scan), with which
	// it reads the index into memory when it takes the state.
	ListPerSec float64 `json:"row_listing_per_second"`
}

// probeState writes rows index entries into a table of its own at
// endpoint, reads them all back three times in slices of 4,096 (sync's
// write slice) and reports the rate of the reads, then lists them whole
// three times and reports the rate of the listing.
func probeState(ctx context.Context, endpoint string, rows int) (*stateProbe, error) {
	c, err := sink.NewClient(ctx, sink.ClientOptions{Endpoint: endpoint})
	if err != nil {
		return nil, err
	}
	table := fmt.Sprintf("dynafold-bench-probe-%d", time.Now().Unix())
	if _, err := statestore.CreateTable(ctx, c, table, time.Minute); err != nil {
		return nil, err
	}
	defer func() { _, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table}) }()
	st, err := statestore.NewDynamo(c, table, "probe")
	if err != nil {
		return nil, err
	}
	keys := make([][]byte, rows)
	entries := make([]statestore.Entry, rows)
	for i := range keys {
		// An encoded one-column key and one item key of the portfolios
		// design's size.
		keys[i] = binary.AppendUvarint([]byte{1}, uint64(i))
		entries[i] = statestore.Entry{Entity: "database", Row: keys[i], Keys: []string{fmt.Sprintf("%d\x00DATABASE#db%dn%dd%d", i/50, i, i%10, i%5)}}
	}
	for batch := range slices.Chunk(entries, 4096) {
		if err := st.SetKeys(ctx, batch); err != nil {
			return nil, err
		}
	}
	const passes = 3
	start := time.Now()
	for range passes {
		for slice := range slices.Chunk(keys, 4096) {
			got, err := st.Keys(ctx, "database", slice)
			if err != nil {
				return nil, err
			}
			if len(got) != len(slice) || got[0] == nil {
				return nil, fmt.Errorf("the probe read back %d entries of %d", len(got), len(slice))
			}
		}
	}
	secs := time.Since(start).Seconds()
	start = time.Now()
	for range passes {
		var listed atomic.Int64
		all, err := st.ListKeys(ctx, 2*rows, func(string, []byte, []string) { listed.Add(1) })
		if err != nil {
			return nil, err
		}
		if !all || listed.Load() != int64(rows) {
			return nil, fmt.Errorf("the probe listed %d entries of %d", listed.Load(), rows)
		}
	}
	listSecs := time.Since(start).Seconds()
	return &stateProbe{Rows: rows, Reads: passes * rows, Seconds: secs, KeysPerSec: float64(passes*rows) / secs,
		ListPerSec: float64(passes*rows) / listSecs}, nil
}
