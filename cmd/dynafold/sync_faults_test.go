package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// bulkPortfolios adds 100 portfolios, databases/20 servers and databases
// databases, so that the initial load has something to be killed in.
func bulkPortfolios(driver string, databases int) string {
	servers := databases / 20
	if driver == "postgres" {
		return fmt.Sprintf(`INSERT INTO portfolios SELECT g, 'P' || g FROM generate_series(100, 199) g;
INSERT INTO servers SELECT 'S' || g, 100 + g %% 100 FROM generate_series(1, %[1]d) g;
INSERT INTO "databases" SELECT 'D' || g, 'S' || (1 + g %% %[1]d) FROM generate_series(1, %[2]d) g;`, servers, databases)
	}
	return fmt.Sprintf(`SET SESSION max_recursive_iterations = 100000;
INSERT INTO portfolios WITH RECURSIVE s(g) AS (SELECT 100 UNION ALL SELECT g + 1 FROM s WHERE g < 199) SELECT g, CONCAT('P', g) FROM s;
INSERT INTO servers WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < %[1]d) SELECT CONCAT('S', g), 100 + g %% 100 FROM s;
INSERT INTO "databases" WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < %[2]d) SELECT CONCAT('D', g), CONCAT('S', 1 + g %% %[1]d) FROM s;`, servers, databases)
}

// TestSyncKilledConverges kills sync with SIGKILL at five moments, two
// during the initial load and three while it streams a workload, each
// followed by a rerun; the table still converges, nothing lost and
// nothing resurrected. A kill during the load comes shortly after the
// load's checkpoint moved; the CI tier loads 4,200 items under a rate
// cap, the full tier 42,000 at full speed.
func TestSyncKilledConverges(t *testing.T) {
	t.Parallel()
	for _, d := range syncDrivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			sd := newSyncDesign(t, d, "portfolios", "testdata/sync/portfolios.yaml")
			require.NoError(t, execScript(d.Name, sd.dsn, bulkPortfolios(d.Name, testenv.Size(4000, 40000))))
			rng := rand.New(rand.NewPCG(7, 7))
			w := newWorkload(t, d.Name, sd.dsn, "portfolios")
			loadCkpt := filepath.Join(sd.dir, ".dynafold", sd.table+".sync.load.json")

			// The workload runs throughout, in its own goroutine.
			stop := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				wrng := rand.New(rand.NewPCG(8, 8))
				for {
					select {
					case <-stop:
						done <- nil
						return
					default:
					}
					stmts := w.next(wrng)
					debugLog(strings.Join(stmts, ";\n") + ";\n--\n")
					if err := execScript(d.Name, sd.dsn, "START TRANSACTION;\n"+strings.Join(stmts, ";\n")+";\nCOMMIT;"); err != nil {
						done <- err
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
			kill := func(during string) {
				// A restart after a kill waits out the fence first: 200 ms
				// is longer than any write of a dead run lives on loopback.
				args := []string{"--fence", "200ms", "--log-level", "info", "--checkpoint-every", "100ms"}
				if during == "load" && !testenv.Full() {
					args = append(args, "--max-wcu", "2000")
				}
				before := readCheckpoint(loadCkpt).rows()
				cmd, out := sd.start(t, args...)
				if during == "stream" {
					waitFor(t, out, `"event":"sync_status"`)
					time.Sleep(time.Duration(100+rng.IntN(1200)) * time.Millisecond)
				} else {
					require.Eventually(t, func() bool { return readCheckpoint(loadCkpt).rows() > before }, time.Minute, 20*time.Millisecond,
						"the load's checkpoint moves; output:\n%s", out)
					time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
					require.NotContains(t, out.String(), "initial load complete", "killed during the load")
				}
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
				_ = cmd.Wait()
				t.Logf("killed during %s; last output:\n%s", during, lastLines(out.String(), 2))
			}
			kill("load")
			kill("load")
			for i := 0; i < 3; i++ {
				kill("stream")
			}
			close(stop)
			require.NoError(t, <-done)
			sd.catchUp(t)
			sd.requireConverged(t)
		})
	}
}

// failAfter is a proxy in front of DynamoDB that forwards BatchWriteItem
// until it has carried n write requests, then refuses every request with
// AccessDeniedException, which the writer does not retry.
func failAfter(t *testing.T, n int64) string {
	t.Helper()
	backend, err := url.Parse(testenv.DynamoEndpoint(t))
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(backend)
	var carried atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".BatchWriteItem") {
			var in struct {
				RequestItems map[string][]json.RawMessage
			}
			_ = json.Unmarshal(body, &in)
			var reqs int64
			for _, rs := range in.RequestItems {
				reqs += int64(len(rs))
			}
			if carried.Add(reqs) > n {
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"__type":"com.amazon.coral.service#AccessDeniedException","message":"the test's writer fails here"}`)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSyncConfirmsOnlyWhatIsWritten runs sync through a writer that fails
// after 300 items, while transactions that each insert one portfolio
// commit. The slot's confirmed position and the checkpoint's never pass a
// transaction whose item is not in the table; the rerun converges.
func TestSyncConfirmsOnlyWhatIsWritten(t *testing.T) {
	t.Parallel()
	for _, d := range pgOnly() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			sd := newSyncDesign(t, d, "portfolios", "testdata/sync/portfolios.yaml")
			proxy := failAfter(t, 300)
			cmd, out := sd.start(t, "--round-changes", "20", "--endpoint", proxy, "--log-level", "debug")
			waitFor(t, out, `"event":"sync_status"`)
			type commit struct {
				id  int
				lsn string
			}
			var commits []commit
			// One session for the 600 transactions: a connection each made
			// the loop the test's longest part on a busy machine.
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, sd.dsn)
			require.NoError(t, err)
			for i := 0; i < 600; i++ {
				id := 5000 + i
				_, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO portfolios (id, name) VALUES (%d, 'P%d')", id, id))
				require.NoError(t, err)
				// The insert position is past the commit record even when it is
				// not yet written (synchronous_commit = off).
				var lsn string
				require.NoError(t, conn.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn))
				commits = append(commits, commit{id, lsn})
			}
			require.NoError(t, conn.Close(ctx))
			err = waitExit(t, cmd, out, time.Minute)
			require.Error(t, err, "the writer failed, so sync must fail:\n%s", out.String())
			require.Contains(t, out.String(), "AccessDeniedException")

			slot := queryRows(t, d.Name, sd.dsn, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '"+slotName(sd.table)+"'")
			require.Len(t, slot, 1)
			var state struct {
				Confirmed string `json:"confirmed"`
			}
			b, err := os.ReadFile(filepath.Join(sd.dir, ".dynafold", sd.table+".sync.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &state))
			present := func(id int) bool {
				o, err := sd.client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(sd.table),
					Key: map[string]types.AttributeValue{"PK": sv(fmt.Sprint(id)), "SK": sv("PORTFOLIO")}})
				require.NoError(t, err)
				return o.Item != nil
			}
			confirmed, missing := 0, 0
			for _, c := range commits {
				inSlot := lsnLE(c.lsn, slot[0][0])
				inState := lsnLE(c.lsn, state.Confirmed)
				if inSlot || inState {
					confirmed++
					require.True(t, present(c.id), "portfolio %d committed by %s is confirmed (slot %s, checkpoint %s) but not in the table; sync's output:\n%s", c.id, c.lsn, slot[0][0], state.Confirmed, lastLines(out.String(), 40))
				}
				if !present(c.id) {
					missing++
				}
			}
			t.Logf("%d of %d transactions confirmed when the writer failed; %d items missing", confirmed, len(commits), missing)
			require.NotZero(t, confirmed, "the writer failed before anything was confirmed: the test proves nothing")
			require.NotZero(t, missing, "every item was written: the writer never failed mid-stream")

			sd.catchUp(t)
			sd.requireConverged(t)
		})
	}
}

func lsnLE(a, b string) bool {
	parse := func(s string) uint64 {
		var hi, lo uint64
		fmt.Sscanf(s, "%X/%X", &hi, &lo)
		return hi<<32 | lo
	}
	return parse(a) <= parse(b)
}

// TestSyncRefusals: what sync cannot do is refused before anything is
// created, with exit 2 and the fix.
func TestSyncRefusals(t *testing.T) {
	t.Parallel()
	for _, d := range pgOnly() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			// A query: entity cannot be followed change by change.
			sd := newSyncDesign(t, d, "alleycat", "configs/alleycat.yaml")
			r := sd.cli(t, "sync", "--until-caught-up", "--progress", "none")
			require.Equal(t, 2, r.Code, r.Output())
			require.Contains(t, r.Stderr, "entity best reads a query:")

			// A table whose changes carry no key.
			sd = newSyncDesign(t, d, "telemetryhub", "configs/telemetryhub.yaml")
			testenv.ExecSQL(t, d.Name, sd.dsn, "ALTER TABLE user_service_groups REPLICA IDENTITY NOTHING")
			r = sd.cli(t, "sync", "--until-caught-up", "--progress", "none")
			require.Equal(t, 2, r.Code, r.Output())
			require.Contains(t, r.Stderr, "user_service_groups has REPLICA IDENTITY NOTHING")
			require.Contains(t, r.Stderr, `fix: ALTER TABLE "user_service_groups" REPLICA IDENTITY FULL;`)
			require.Empty(t, queryRows(t, d.Name, sd.dsn, "SELECT 1 FROM pg_replication_slots WHERE slot_name = '"+slotName(sd.table)+"'"), "nothing is created before the checks pass")
			// plan reports the same under "sync readiness", without failing.
			r = sd.cli(t, "plan", "--no-target")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "SYNC READINESS\n  not ready: table user_service_groups has REPLICA IDENTITY NOTHING")
			testenv.ExecSQL(t, d.Name, sd.dsn, "ALTER TABLE user_service_groups REPLICA IDENTITY DEFAULT")
			r = sd.cli(t, "plan", "--no-target")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "SYNC READINESS\n  ready:")

			// A role that may not replicate.
			role := "norepl_" + strings.ToLower(sd.table[len(sd.table)-8:])
			testenv.ExecSQL(t, d.Name, sd.dsn, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD 'pw' NOREPLICATION; GRANT SELECT ON ALL TABLES IN SCHEMA public TO %s", role, role))
			u, err := url.Parse(sd.dsn)
			require.NoError(t, err)
			u.User = url.UserPassword(role, "pw")
			r = clitest.Run(t, sd.dir, nil, append(append([]string{"sync", "--progress", "none"}, sd.flags...), "--source-dsn", u.String())...)
			require.Equal(t, 2, r.Code, r.Output())
			require.Contains(t, r.Stderr, "may not replicate")
			require.Contains(t, r.Stderr, "WITH REPLICATION")
			require.NotContains(t, r.Output(), "pw@", "the password is never printed")
		})
	}
}

// TestSyncCleanupLeavesNothing: after sync cleanup no slot, publication or
// state file remains.
func TestSyncCleanupLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, d := range pgOnly() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			sd := newSyncDesign(t, d, "portfolios", "configs/portfolios.yaml")
			sd.catchUp(t)
			slot := slotName(sd.table)
			require.Len(t, queryRows(t, d.Name, sd.dsn, "SELECT 1 FROM pg_replication_slots WHERE slot_name = '"+slot+"'"), 1)
			r := sd.cli(t, "sync", "cleanup")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "removed replication slot "+slot)
			require.Contains(t, r.Stdout, "removed publication "+slot)
			require.Empty(t, queryRows(t, d.Name, sd.dsn, "SELECT 1 FROM pg_replication_slots WHERE slot_name = '"+slot+"'"))
			require.Empty(t, queryRows(t, d.Name, sd.dsn, "SELECT 1 FROM pg_publication WHERE pubname = '"+slot+"'"))
			entries, _ := filepath.Glob(filepath.Join(sd.dir, ".dynafold", sd.table+".sync*"))
			require.Empty(t, entries)
			r = sd.cli(t, "sync", "cleanup")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "nothing to clean up")
		})
	}
}

// waitExit waits for a background sync to exit, and fails the test with
// its output when it does not within limit.
func waitExit(t *testing.T, cmd *exec.Cmd, out *syncBuffer, limit time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		<-done
		t.Fatalf("sync did not exit within %s:\n%s", limit, out.String())
		return nil
	}
}

func debugLog(s string) {
	f, _ := os.OpenFile("/tmp/wl.sql", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	f.WriteString(time.Now().Format("15:04:05.000") + " " + s)
	f.Close()
}
