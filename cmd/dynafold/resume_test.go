package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/pipeline"
)

// runReport is --report as the tests read it: the summary decodes into the
// type migrate writes it from.
type runReport struct {
	RunID       string            `json:"run_id"`
	Fingerprint string            `json:"mapping_fingerprint"`
	ExitCode    int               `json:"exit_code"`
	Error       string            `json:"error"`
	Started     string            `json:"started"`
	Ended       string            `json:"ended"`
	Summary     *pipeline.Summary `json:"summary"`
}

func readReport(t *testing.T, path string) runReport {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var r runReport
	require.NoError(t, json.Unmarshal(data, &r), string(data))
	require.NotNil(t, r.Summary, string(data))
	return r
}

// Kill dynafold with SIGKILL five times during a migration, each time at a
// random moment shortly after its checkpoint moved, and resume after each:
// the table ends up with exactly the expected items, and the checkpoint's
// counters add up to the source. The CI tier migrates 30,000 items under
// a --max-wcu cap that makes the run last a few seconds; the full tier
// 200,000 at full speed.
func TestKillAndResumeLosesNothing(t *testing.T) {
	t.Parallel()
	portfolios := testenv.Size(3000, 20000) // ten rows and items each
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill moments drawn with seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			loadScale(t, d.Name, dsn, portfolios)
			tg := &target{client: testenv.DynamoClient(t), table: testenv.NewTableName(t), dsn: dsn}
			testenv.DeleteTableOnCleanup(t, tg.client, tg.table)
			tg.flags = []string{"--config", clitest.RepoPath("configs/portfolios.yaml"), "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", tg.table}
			require.Equal(t, 0, tg.run(t, "", "table", "create").Code)
			dir := t.TempDir()
			args := append([]string{"migrate", "--progress", "none", "--checkpoint-every", "100ms"}, tg.flags...)
			killed := args
			if !testenv.Full() {
				killed = append(killed, "--max-wcu", "5000")
			}
			ckpt := filepath.Join(dir, ".dynafold", tg.table+".checkpoint.json")
			for kill := 0; kill < 5; kill++ {
				before := readCheckpoint(ckpt).rows()
				// Up to 300 ms after the move: anywhere in a batch's life.
				var moved time.Time
				wait := time.Duration(rng.IntN(300)) * time.Millisecond
				killWhen(t, dir, nil, func() bool {
					doc := readCheckpoint(ckpt)
					require.False(t, doc.Complete, "the run must not have finished when it is killed")
					if moved.IsZero() && doc.rows() > before {
						moved = time.Now()
					}
					return !moved.IsZero() && time.Since(moved) >= wait
				}, killed...)
				t.Logf("killed %v after the checkpoint moved past %d rows", wait, before)
			}

			report := filepath.Join(dir, "final.json")
			r := clitest.Run(t, dir, nil, append(args, "--report", report)...)
			require.Equal(t, 0, r.Code, r.Output())
			rep := readReport(t, report)
			require.True(t, rep.Summary.Resumed, "the last run resumes the killed ones")
			require.EqualValues(t, 10*portfolios, rep.Summary.Total.CheckpointRows, "rows acknowledged over all runs")
			require.EqualValues(t, 10*portfolios, rep.Summary.Total.CheckpointItems, "items acknowledged over all runs")
			require.Less(t, rep.Summary.Total.RowsRead, int64(10*portfolios), "the last run did not start over")
			requireScaleTable(t, tg.client, tg.table, portfolios)
		})
	}
}

// SIGINT stops reading, lets writes in flight finish, saves the checkpoint,
// prints the summary and exits 4. A changed mapping is then refused on
// resume unless --force; --restart starts over.
func TestInterruptThenChangedMappingIsRefused(t *testing.T) {
	t.Parallel()
	portfolios := testenv.Size(600, 6000) // ten rows and items each
	d := testenv.Drivers()[0]
	dsn := d.NewDB(t)
	loadScale(t, d.Name, dsn, portfolios)
	tg := &target{client: testenv.DynamoClient(t), table: testenv.NewTableName(t), dsn: dsn}
	testenv.DeleteTableOnCleanup(t, tg.client, tg.table)
	common := []string{"--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", tg.table, "--progress", "json"}
	config := clitest.RepoPath("configs/portfolios.yaml")
	dir := t.TempDir()
	r := clitest.Run(t, dir, nil, "table", "create", "--config", config, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", tg.table)
	require.Equal(t, 0, r.Code, r.Output())
	r = clitest.Run(t, dir, nil, "table", "create", "--config", config, "--progress", "json")
	require.Equal(t, exitUsage, r.Code, "an unknown flag is invalid usage")
	require.Contains(t, r.Stderr, "unknown flag: --progress")

	// Interrupted once its checkpoint holds rows; in the CI tier a rate cap
	// keeps the 6,000 items from being done by then.
	interrupted := append([]string{"migrate", "--config", config, "--report", "stopped.json", "--checkpoint-every", "100ms"}, common...)
	if !testenv.Full() {
		interrupted = append(interrupted, "--max-wcu", "2000")
	}
	cmd := clitest.Command(context.Background(), t, dir, nil, interrupted...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	ckpt := filepath.Join(dir, ".dynafold", tg.table+".checkpoint.json")
	require.Eventually(t, func() bool { return readCheckpoint(ckpt).rows() > 0 }, time.Minute, 20*time.Millisecond, "the checkpoint holds rows")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	require.Error(t, err, "an interrupted run does not exit 0")
	require.Equal(t, exitInterrupted, cmd.ProcessState.ExitCode(), stdout.String()+stderr.String())
	require.Contains(t, stderr.String(), "stopping; finishing writes in flight and saving the checkpoint")
	require.Contains(t, stdout.String(), "run interrupted")
	require.Regexp(t, `(?m)^\s+total\s+\d+`, stdout.String(), "the summary is printed")
	stopped := readReport(t, filepath.Join(dir, "stopped.json"))
	require.Equal(t, exitInterrupted, stopped.ExitCode)
	require.True(t, stopped.Summary.Interrupted)
	require.NotEmpty(t, stopped.RunID)
	require.Len(t, stopped.Fingerprint, 32)
	require.Less(t, stopped.Summary.Total.CheckpointRows, int64(10*portfolios))

	// The mapping changes: one more attribute on servers.
	data, err := os.ReadFile(config)
	require.NoError(t, err)
	changed := filepath.Join(dir, "changed.yaml")
	require.NoError(t, os.WriteFile(changed, []byte(strings.Replace(string(data), "ServerID: id", "ServerID: id\n      Kind: {value: server}", 1)), 0o644))
	r = clitest.Run(t, dir, nil, append([]string{"migrate", "--config", changed}, common...)...)
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "checkpoint was made with a different mapping, source or table")
	require.Contains(t, r.Stderr, "use --restart to discard it and start over, or --force to resume its positions anyway")

	// --force resumes the saved positions under the new mapping.
	r = clitest.Run(t, dir, nil, append([]string{"migrate", "--config", changed, "--force", "--report", "forced.json"}, common...)...)
	require.Equal(t, 0, r.Code, r.Output())
	forced := readReport(t, filepath.Join(dir, "forced.json"))
	require.True(t, forced.Summary.Resumed)
	require.EqualValues(t, 10*portfolios, forced.Summary.Total.CheckpointRows)

	// --restart discards the (finished) checkpoint and reads everything again.
	r = clitest.Run(t, dir, nil, append([]string{"migrate", "--config", config, "--restart", "--report", "restarted.json"}, common...)...)
	require.Equal(t, 0, r.Code, r.Output())
	restarted := readReport(t, filepath.Join(dir, "restarted.json"))
	require.False(t, restarted.Summary.Resumed)
	require.EqualValues(t, 10*portfolios, restarted.Summary.Total.RowsRead)
	requireScaleTable(t, tg.client, tg.table, portfolios)

	// Without a terminal, progress is JSON status lines on stderr.
	var sawProgress bool
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(line, "{") {
			var p struct {
				Event    string `json:"event"`
				Entities []struct {
					Entity   string `json:"entity"`
					RowsRead int64  `json:"rows_read"`
				} `json:"entities"`
			}
			require.NoError(t, json.Unmarshal([]byte(line), &p), line)
			require.Equal(t, "progress", p.Event)
			require.Len(t, p.Entities, 3)
			sawProgress = true
		}
	}
	require.True(t, sawProgress, "a JSON progress line, at least the final one")
}
