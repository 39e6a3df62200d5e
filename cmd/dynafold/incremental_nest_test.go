package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
)

// incrementalEmptyCollection adds a portfolio 4 (a server and a database)
// stamped long before the watermark, so that the first run writes its
// collection and a later change can delete every row of it.
var incrementalEmptyCollection = map[string]string{
	"postgres": `
		INSERT INTO portfolios (id, name, updated_at) VALUES (4, 'Dan''s Deli', '2025-01-01 00:00:00+00');
		INSERT INTO servers (id, portfolio_id, hostname, updated_at) VALUES ('s4a', 4, 'dan-site', '2025-01-01 00:00:00+00');
		INSERT INTO databases (id, server_id, engine, updated_at) VALUES ('d9', 's4a', 'sqlite', '2025-01-01 00:00:00+00');
	`,
	"mysql": "INSERT INTO portfolios (id, name, updated_at) VALUES (4, 'Dan''s Deli', '2025-01-01 00:00:00');" +
		"INSERT INTO servers (id, portfolio_id, hostname, updated_at) VALUES ('s4a', 4, 'dan-site', '2025-01-01 00:00:00');" +
		"INSERT INTO `databases` (id, server_id, engine, updated_at) VALUES ('d9', 's4a', 'sqlite', '2025-01-01 00:00:00');",
}

// incrementalNestChanges moves a nested contact to another portfolio,
// hard-deletes another, and deletes every row of collection 4. PostgreSQL
// stamps the moved row in the statement, MySQL by ON UPDATE.
var incrementalNestChanges = map[string]string{
	"postgres": `
		UPDATE contacts SET portfolio_id = 3, updated_at = now() WHERE email = 'a@jeff.example';
		DELETE FROM contacts WHERE email = 'b@bob.example';
		DELETE FROM databases WHERE id = 'd9';
		DELETE FROM servers WHERE id = 's4a';
		DELETE FROM portfolios WHERE id = 4;
	`,
	"mysql": "UPDATE contacts SET portfolio_id = 3 WHERE email = 'a@jeff.example';" +
		"DELETE FROM contacts WHERE email = 'b@bob.example';" +
		"DELETE FROM `databases` WHERE id = 'd9'; DELETE FROM servers WHERE id = 's4a'; DELETE FROM portfolios WHERE id = 4;",
}

// TestMigrateIncrementalNestsAndEmptiedCollection: a nested child moved to
// another parent and one hard-deleted leave their old parents' items
// holding them, and a collection whose every row was deleted keeps its
// items, unless the incremental run finds them: the nest check rewrites
// the old parents, the key sweep (scanning the table's keys) deletes the
// emptied collection. The table then equals a fresh full migrate.
func TestMigrateIncrementalNestsAndEmptiedCollection(t *testing.T) {
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			const config = "testdata/incremental/mapping.yaml"
			tg := newTarget(t, d, config, "testdata/incremental/"+d.Name+".sql")
			testenv.ExecSQL(t, d.Name, tg.dsn, incrementalEmptyCollection[d.Name])
			require.Equal(t, 0, tg.run(t, "", "table", "create").Code)
			dir := t.TempDir()
			rep := runIncremental(t, tg, dir)
			require.True(t, rep.Result.Full)
			require.EqualValues(t, 17, rep.Result.ItemsWritten) // 14 + portfolio 4, s4a, d9

			testenv.ExecSQL(t, d.Name, tg.dsn, incrementalNestChanges[d.Name])

			// The preview reads the nest-bearing portfolios in full: 1 (lost
			// a contact by a move), 2 (lost one by a delete) and 3 (gained
			// one) are to update; the three items of collection 4 to delete.
			for _, args := range [][]string{{"diff", "--incremental"}, {"migrate", "--incremental", "--dry-run"}} {
				r := tg.run(t, dir, append(args, "--output", "json")...)
				require.Equal(t, 3, r.Code, r.Output())
				var p struct {
					Write  int64 `json:"items_to_write"`
					Delete int64 `json:"items_to_delete"`
				}
				require.NoError(t, json.Unmarshal([]byte(r.Stdout), &p), r.Stdout)
				require.Equal(t, int64(3), p.Write, r.Stdout)
				require.Equal(t, int64(3), p.Delete, r.Stdout)
			}

			rep = runIncremental(t, tg, dir)
			require.False(t, rep.Result.Full)
			// The narrowed pass: portfolio 3 (its new contact, and its own
			// stamp at the watermark), s3a (watermark), d1 (watermark), d6
			// and d7 (their server s3a).
			require.EqualValues(t, 5, rep.Result.RowsRederived)
			// The nest check compares portfolios 1, 2, 3 and rewrites 1 and
			// 2, which lost a contact without being stamped.
			require.EqualValues(t, 3, rep.Result.NestChecked)
			require.EqualValues(t, 2, rep.Result.NestRewritten)
			require.EqualValues(t, 7, rep.Result.ItemsWritten)
			// The key sweep reads the source's 14 rows by their key columns
			// and the table's 17 keys, and deletes collection 4's 3 items.
			require.EqualValues(t, 14, rep.Result.SweepRowsRead)
			require.EqualValues(t, 17, rep.Result.SweepKeysScanned)
			require.EqualValues(t, 3, rep.Result.Swept)
			require.EqualValues(t, 3, rep.Result.ItemsDeleted)
			requireSameAsFreshMigrate(t, tg, config)

			// Nothing changed since: the nest check rewrites nothing, the
			// sweep deletes nothing.
			rep = runIncremental(t, tg, dir)
			require.EqualValues(t, 0, rep.Result.NestRewritten)
			require.EqualValues(t, 0, rep.Result.ItemsDeleted)
		})
	}
}
