package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readTree returns the files below dir, keyed by slash-separated relative path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func generateInto(t *testing.T) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	if _, err := generate(dir); err != nil {
		t.Fatal(err)
	}
	return readTree(t, dir)
}

func TestDeterministic(t *testing.T) {
	a := generateInto(t)
	b := generateInto(t)
	if len(a) != 2*len(datasets()) {
		t.Fatalf("generated %d files, want %d", len(a), 2*len(datasets()))
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

// TestUpToDate fails when the committed SQL files under testdata/ do not
// match what the generator produces.
func TestUpToDate(t *testing.T) {
	want := generateInto(t)
	root := ".." // this package lives in testdata/gen
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("testdata/%s: %v; run go run ./testdata/gen", name, err)
			continue
		}
		if !bytes.Equal(got, data) {
			t.Errorf("testdata/%s is out of date; run go run ./testdata/gen", name)
		}
	}
}

func tableByName(t *testing.T, dsName, tableName string) *table {
	t.Helper()
	for _, ds := range datasets() {
		if ds.name != dsName {
			continue
		}
		for _, tb := range ds.tables {
			if tb.name == tableName {
				tb.sortByPK()
				return tb
			}
		}
	}
	t.Fatalf("no table %s.%s", dsName, tableName)
	return nil
}

func countBy(tb *table, colName string) map[int64]int {
	i := tb.colIndex(colName)
	m := map[int64]int{}
	for _, row := range tb.rows {
		m[int64(row[i].(ival))]++
	}
	return m
}

// TestDocumentedFacts checks the facts docs/examples.md documents and other tests
// rely on.
func TestDocumentedFacts(t *testing.T) {
	photosPerUser := countBy(tableByName(t, "photos", "photos"), "user_id")
	if photosPerUser[7] != 25 {
		t.Errorf("user 7 has %d photos, want 25", photosPerUser[7])
	}
	for u, n := range photoCounts {
		if photosPerUser[int64(u+1)] != n {
			t.Errorf("user %d has %d photos, want %d", u+1, photosPerUser[int64(u+1)], n)
		}
	}

	votesPer := countBy(tableByName(t, "votes", "votes"), "contestant_id")
	for c, n := range voteCounts {
		if votesPer[int64(c+1)] != n {
			t.Errorf("contestant %d has %d votes, want %d", c+1, votesPer[int64(c+1)], n)
		}
	}

	races := tableByName(t, "alleycat", "races")
	for _, row := range races.rows {
		id, dur := row[0].(ival), row[3].(ival)
		long := id == 13 || id == 14
		if long && dur != 3600 || !long && dur != 300 {
			t.Errorf("race %d lasts %d s", id, dur)
		}
	}
	results := tableByName(t, "alleycat", "race_results")
	var racer1 []int
	for _, row := range results.rows {
		if row[1].(ival) == 1 {
			racer1 = append(racer1, int(row[0].(ival)))
		}
	}
	if !slices.Equal(racer1, racer1Races) {
		t.Errorf("racer 1 rides in %v, want %v", racer1, racer1Races)
	}
	type key struct{ race, racer ival }
	sums := map[key]int64{}
	for _, row := range tableByName(t, "alleycat", "race_readings").rows {
		sums[key{row[0].(ival), row[1].(ival)}] += int64(row[5].(ival))
	}
	for _, row := range results.rows {
		k := key{row[0].(ival), row[1].(ival)}
		if int64(row[2].(ival)) != sums[k] {
			t.Errorf("race %d racer %d: total_output %d, sum of readings %d", k.race, k.racer, row[2].(ival), sums[k])
		}
	}

	for _, row := range tableByName(t, "devices", "device_reports").rows {
		_, isNull := row[3].(null)
		if fault := row[2].(sval) == "FAULT"; fault == isNull {
			t.Errorf("device %s at %v: status %s, escalated_to %v", row[0], row[1], row[2], row[3])
		}
	}
}

func TestQuote(t *testing.T) {
	cases := []struct {
		in, pg, my string
	}{
		{"O'Brien", "'O''Brien'", "'O''Brien'"},
		{`a\b`, `'a\b'`, `'a\\b'`},
		{"東京 Zoë", "'東京 Zoë'", "'東京 Zoë'"},
	}
	for _, c := range cases {
		if got := quote(c.in, postgres); got != c.pg {
			t.Errorf("quote(%q, postgres) = %s, want %s", c.in, got, c.pg)
		}
		if got := quote(c.in, mysql); got != c.my {
			t.Errorf("quote(%q, mysql) = %s, want %s", c.in, got, c.my)
		}
	}
	if got := (aval{"/a", `/"b"`}).literal(mysql); got != `'["/a", "/\\"b\\""]'` {
		t.Errorf("JSON array literal = %s", got)
	}
	if got := dec(5, 2).String(); got != "0.05" {
		t.Errorf("dec(5, 2) = %s", got)
	}
	if !strings.HasSuffix(tval(utc(2024, 3, 5, 14, 7, 12)).literal(postgres), "+00'") {
		t.Error("postgres timestamp literal without offset")
	}
}
