package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
)

// chinookEntities are configs/chinook.yaml's entities; each is named
// after the table it maps, one item per row.
var chinookEntities = []string{
	"artist", "album", "track", "genre", "media_type", "playlist", "playlist_track",
	"employee", "customer", "invoice", "invoice_line",
}

// The real Chinook dataset (testdata/chinook, scripts/chinook.sh) migrates
// from both databases into the same items: one per row of every table,
// invoice lines carrying their track's name, album title and artist name
// through three joins, and the design's access patterns holding.
func TestMigrateChinook(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		scans = map[string][]string{}
	)
	// The engines run in parallel inside a group, which returns when both
	// are done, so that their tables can be compared after it.
	t.Run("engines", func(t *testing.T) {
		for _, d := range testenv.Drivers() {
			t.Run(d.Name, func(t *testing.T) {
				t.Parallel()
				items := migrateChinook(t, d)
				mu.Lock()
				defer mu.Unlock()
				scans[d.Name] = items
			})
		}
	})
	pg, my := scans["postgres"], scans["mysql"]
	if pg == nil || my == nil {
		return // a subtest failed or skipped and said why
	}
	require.Len(t, my, len(pg))
	for i := range pg {
		require.Equal(t, pg[i], my[i], "PostgreSQL and MariaDB give the same items")
	}
}

// migrateChinook loads the dataset into a fresh d database, migrates it
// into a fresh table, checks the table against the source and returns
// the table's items (testenv.ScanItems).
func migrateChinook(t *testing.T, d testenv.Driver) []string {
	t.Helper()
	ds := newDesign(t, d, "chinook")
	ds.migrate(t)
	items := testenv.ScanItems(t, ds.client, ds.table)

	got := map[string]int64{}
	lines := map[int64]map[string]any{}
	for _, line := range items {
		it := chinookItem(t, line)
		typ, _ := it["_type"].(string)
		got[typ]++
		if typ == "invoice_line" {
			lines[chinookInt(t, it["InvoiceLineID"])] = it
		}
	}
	want := map[string]int64{}
	for _, e := range chinookEntities {
		want[e] = sqlInts(t, ds.driver, ds.dsn, "SELECT COUNT(*) FROM "+e)[0][0]
	}
	require.Equal(t, want, got, "one item per source row of every table")

	// Every invoice line carries what the join chain
	// invoice_line -> track -> album -> artist returns.
	rows := testenv.Rows(t, ds.driver, ds.dsn, `SELECT il.invoice_line_id, i.customer_id, il.invoice_id, t.name, al.title, ar.name
		FROM invoice_line il
		JOIN invoice i ON i.invoice_id = il.invoice_id
		JOIN track t ON t.track_id = il.track_id
		JOIN album al ON al.album_id = t.album_id
		JOIN artist ar ON ar.artist_id = al.artist_id`)
	require.Len(t, rows, len(lines))
	var line17 []string
	for _, row := range rows {
		id, err := strconv.ParseInt(row[0], 10, 64)
		require.NoError(t, err)
		it := lines[id]
		require.NotNil(t, it, "invoice line %d has no item", id)
		names := []string{}
		for _, a := range []string{"TrackName", "AlbumTitle", "ArtistName"} {
			s, _ := it[a].(string)
			names = append(names, s)
		}
		require.Equal(t, row[3:], names, "invoice line %d", id)
		if id == 17 {
			line17 = row
		}
	}
	// One line read by its key: the key templates place it in its
	// customer's collection, under its invoice; the names are not
	// ASCII, so both engines' text arrives intact.
	require.NotNil(t, line17)
	customer, _ := strconv.Atoi(line17[1])
	invoice, _ := strconv.Atoi(line17[2])
	out, err := ds.client.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName:      aws.String(ds.table),
		ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"PK": sv(fmt.Sprintf("CUSTOMER#%d", customer)),
			"SK": sv(fmt.Sprintf("INVOICE#%06d#LINE#%06d", invoice, 17)),
		},
	})
	require.NoError(t, err)
	require.NotEmpty(t, out.Item, "invoice line 17 by its key")
	require.Equal(t, []string{"Por Causa De Você", "Warner 25 Anos", "Antônio Carlos Jobim"}, line17[3:])
	require.Equal(t, line17[3:], []string{strAttr(out.Item["TrackName"]), strAttr(out.Item["AlbumTitle"]), strAttr(out.Item["ArtistName"])})

	code, rep := ds.compare(t, "verify")
	require.Equal(t, 0, code, "verify: source and table agree")
	require.True(t, rep.InSync)
	require.Equal(t, int64(len(items)), rep.Totals.Unchanged)
	require.Zero(t, rep.Totals.Differences())
	require.Zero(t, rep.Totals.RowErrors)

	ds.patternsHold(t)
	return items
}

// chinookItem decodes one line of testenv.ScanItems, numbers as json.Number.
func chinookItem(t *testing.T, line string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(line)))
	dec.UseNumber()
	var it map[string]any
	require.NoError(t, dec.Decode(&it), line)
	return it
}

func chinookInt(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	require.True(t, ok, "%v is not a number", v)
	i, err := n.Int64()
	require.NoError(t, err)
	return i
}
