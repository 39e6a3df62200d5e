package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/tcpproxy"
	"github.com/dynafold/dynafold/internal/testenv"
)

// TestMigrateWithManyWritersThroughOutages: the endpoint drops every
// connection and refuses new ones for about a second, four times, while
// 32 writers write. Each writer's request then fails, and the reach guard
// sends the same body again once the endpoint is back: a body recycled
// before its last send went out as another writer's batch (the run failed
// with SerializationException, or, when the overwrite was valid JSON, the
// wrong batch was written and the right one acknowledged). The run must
// complete, every item equal to a fresh build (verify exit 0) and the
// count exact, through the direct sender (from PostgreSQL) and through the
// SDK's client (from MariaDB), with a race-built CLI.
func TestMigrateWithManyWritersThroughOutages(t *testing.T) {
	t.Parallel()
	clitest.RaceBuilt(t)
	paths := map[string]string{"postgres": "direct", "mysql": "sdk"}
	for _, d := range testenv.Drivers() {
		path := paths[d.Name]
		t.Run(d.Name+"/"+path, func(t *testing.T) {
			t.Parallel()
			// 10 items a portfolio; --max-wcu stretches the run over the
			// outages instead of more data.
			const portfolios = 800
			tg := newScaleTarget(t, d, portfolios)
			proxy, err := tcpproxy.Start(strings.TrimPrefix(testenv.DynamoEndpoint(t), "http://"))
			require.NoError(t, err)
			defer proxy.Close()

			dir := t.TempDir()
			report := filepath.Join(dir, "report.json")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := clitest.Command(ctx, t, dir, nil, append([]string{"migrate", "--writers", "32", "--max-wcu", "700",
				"--write-path", path, "--progress", "none", "--log-level", "warn", "--report", report}, tg.with("http://"+proxy.Addr())...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()

			// The outages start once items are being written.
			require.Eventually(t, func() bool { return tableHasItems(t, tg.client, tg.table) }, time.Minute, 20*time.Millisecond)
			outages := 0
		outage:
			for range 4 {
				select {
				case <-done:
					t.Fatalf("migrate ended before the outages did: %s%s", stdout.String(), stderr.String())
				default:
				}
				require.NoError(t, proxy.Pause())
				time.Sleep(1200 * time.Millisecond)
				require.NoError(t, proxy.Resume())
				outages++
				select {
				case err := <-done:
					done <- err
					break outage
				case <-time.After(800 * time.Millisecond):
				}
			}
			err = <-done
			out := stdout.String() + stderr.String()
			require.NoError(t, err, out)
			require.GreaterOrEqual(t, outages, 3, "the run outlasted three outages")
			require.Contains(t, out, "cannot reach DynamoDB at", "the writers met the outages")

			rep := readReport(t, report)
			require.Equal(t, 0, rep.ExitCode)
			require.EqualValues(t, 10*portfolios, rep.Summary.Total.ItemsWritten, "every item acknowledged exactly once")
			// Whether a request was broken mid-flight (and counted as
			// retried) or held by the reach guard before it was sent is
			// the outage's timing: a CI run saw 0 retried. That the
			// writers met the outages is the message above.
			t.Logf("%d requests sent again", rep.Summary.Total.Retried)

			requireScaleTable(t, tg.client, tg.table, portfolios)
			r := tg.run(t, dir, "verify")
			require.Equal(t, 0, r.Code, r.Output())
		})
	}
}

// tableHasItems reports whether table holds any item yet.
func tableHasItems(t *testing.T, client *dynamodb.Client, table string) bool {
	out, err := client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(1)})
	require.NoError(t, err)
	return len(out.Items) > 0
}
