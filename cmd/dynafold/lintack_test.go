package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/plan"
)

// A finding plan treats as an error (exit 2) stops migrate, migrate
// --dry-run and table create too, before they write or create anything;
// acknowledged in the mapping (lint: {ignore: [check]}) it is reported as
// acknowledged by each of them and stops none.
func TestPlanAndMigrateAgreeOnLintErrors(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0]
	dsn := d.NewDB(t)
	// sku is unique in the data but not declared unique: keying items by
	// it alone is key.incomplete, an error the operator may judge safe,
	// and one only the source's schema reveals.
	testenv.ExecSQL(t, d.Name, dsn, `
CREATE TABLE products (id integer PRIMARY KEY, sku varchar(20) NOT NULL);
INSERT INTO products VALUES (1, 'A-1'), (2, 'B-2'), (3, 'C-3');`)
	const body = `
version: 1
source: {driver: postgres}
target: {table: products, key: {pk: PK, sk: SK}}
entities:
  product:
    from: products
    key: {pk: "SKU#${sku}", sk: "PRODUCT"}
`
	client := testenv.DynamoClient(t)
	table := testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, client, table)
	endpoint := testenv.DynamoEndpoint(t)
	target := []string{"--endpoint", endpoint, "--table", table}
	withSource := append([]string{"--source-dsn", dsn}, target...)
	refused := func(t *testing.T, r clitest.Result) {
		t.Helper()
		require.Equal(t, exitUsage, r.Code, r.Output())
		require.Contains(t, r.Stderr, "the mapping has 1 errors, as dynafold plan reports:")
		require.Contains(t, r.Stderr, "(key.incomplete)")
		require.Contains(t, r.Stderr, "lint: {ignore: [CHECK]}")
	}

	cfg := writeMapping(t, body)
	r, rep := runPlan(t, "--config", cfg, "--source-dsn", dsn, "--no-target")
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, checksOf(rep, "error"), "key.incomplete")

	// table create checks the mapping against the source's tables.
	refused(t, clitest.Run(t, "", nil, append([]string{"table", "create", "--config", cfg}, withSource...)...))
	r = clitest.Run(t, "", nil, append([]string{"dump", "--config", cfg}, target...)...)
	require.Contains(t, r.Stderr, "does not exist", "no table was created")
	// Without a source it checks what it can, and says so.
	r = clitest.Run(t, "", nil, append([]string{"table", "create", "--config", cfg}, target...)...)
	require.Equal(t, 0, r.Code, r.Output())
	require.Contains(t, r.Stderr, "dynafold: no source DSN: the mapping is checked only as far as it can be without the source's tables")

	refused(t, clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none", "--config", cfg}, withSource...)...))
	refused(t, clitest.Run(t, "", nil, append([]string{"migrate", "--dry-run", "--config", cfg}, withSource...)...))
	refused(t, clitest.Run(t, "", nil, append([]string{"diff", "--config", cfg}, withSource...)...))
	require.Empty(t, testenv.ScanItems(t, client, table), "nothing written")

	cfg = writeMapping(t, body+"lint: {ignore: [key.incomplete, key.typo]}\n")
	r, rep = runPlan(t, "--config", cfg, "--source-dsn", dsn, "--no-target")
	require.Equal(t, 0, r.Code, r.Output())
	require.NotContains(t, checksOf(rep, "error"), "key.incomplete")
	var ack, unmatched bool
	for _, f := range rep.Findings {
		if f.Check == "key.incomplete" {
			ack = f.Acknowledged && f.Severity == "note" && f.Was == "error" && strings.HasSuffix(f.Message, "(acknowledged: lint.ignore lists key.incomplete)")
		}
		if f.Check == "lint.ignore" && strings.Contains(f.Message, "key.typo") {
			unmatched = true
		}
	}
	require.True(t, ack, "the finding is reported as acknowledged: %+v", rep.Findings)
	require.True(t, unmatched, "an ignore that matches nothing is noted")

	acknowledged := func(t *testing.T, r clitest.Result, code int) {
		t.Helper()
		require.Equal(t, code, r.Code, r.Output())
		require.Regexp(t, `(?m)^dynafold: acknowledged error key\.incomplete: entities\.product\.key: .*\(acknowledged: lint\.ignore lists key\.incomplete\)$`, r.Stderr)
	}
	acknowledged(t, clitest.Run(t, "", nil, append([]string{"table", "create", "--config", cfg}, withSource...)...), 0)
	acknowledged(t, clitest.Run(t, "", nil, append([]string{"migrate", "--dry-run", "--config", cfg}, withSource...)...), exitDifferences)
	acknowledged(t, clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none", "--config", cfg}, withSource...)...), 0)
	require.Len(t, testenv.ScanItems(t, client, table), 3)
}

// checksOf lists the checks of a report's findings of one severity.
func checksOf(rep *plan.Report, sev plan.Severity) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Severity == sev {
			out = append(out, f.Check)
		}
	}
	return out
}

// table create validates the whole mapping before it creates anything: a
// finding plan calls an error that needs no source (here a projected
// attribute name over DynamoDB's 255 bytes) is refused, and no table is
// created.
func TestTableCreateRefusesWhatPlanRefuses(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 256)
	cfg := writeMapping(t, `
version: 1
source: {driver: postgres}
target:
  table: products
  key: {pk: PK, sk: SK}
  indexes:
    GSI1: {type: global, pk: GSI1PK, projection: include, include: [`+long+`]}
entities:
  product:
    from: products
    key: {pk: "P#${id}", sk: "P"}
    index: {GSI1: {pk: "${sku}"}}
`)
	client := testenv.DynamoClient(t)
	table := testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, client, table)
	r := clitest.Run(t, "", nil, "table", "create", "--config", cfg, "--endpoint", testenv.DynamoEndpoint(t), "--table", table)
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "(name.length)")
	r = clitest.Run(t, "", nil, "dump", "--config", cfg, "--endpoint", testenv.DynamoEndpoint(t), "--table", table)
	require.Contains(t, r.Stderr, "does not exist", "no table was created")
}
