package testenv

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGServer is a PostgreSQL server of the test's own, for tests that
// restart, stop, promote or reconfigure the server: the shared one serves
// every other test at once. It listens on loopback with trust
// authentication for the dynafold role, wal_level = logical, and is
// stopped and removed when the test ends.
type PGServer struct {
	Port int
	Dir  string // the data directory
	bin  string
	user string // the OS user the server runs as
	log  string
}

var pgTemplate struct {
	once sync.Once
	dir  string
	err  error
}

// pgBin is the newest PostgreSQL's bin directory, as scripts/services.sh
// picks it.
func pgBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("no PostgreSQL server binaries (initdb) found: scripts/services.sh installs them")
}

// pgUser is the OS user PostgreSQL runs as: PostgreSQL refuses root, so
// as root it is the user scripts/services.sh runs the shared server as.
func pgUser() string {
	if os.Geteuid() != 0 {
		u, _ := user.Current()
		return u.Username
	}
	for _, name := range []string{"postgres", "dynafold-pg"} {
		if _, err := user.Lookup(name); err == nil {
			return name
		}
	}
	return "postgres"
}

// asPG runs a PostgreSQL program as the server's OS user.
func asPG(pgUser string, name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		cmd := exec.Command("runuser", append([]string{"-u", pgUser, "--", name}, args...)...)
		cmd.Dir = "/"
		return cmd
	}
	return exec.Command(name, args...)
}

// pgDir makes a directory the server's OS user owns, outside the test's
// own temporary directories (which that user cannot enter).
func pgDir(t testing.TB, pgUser string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dynafold-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", pgUser, dir).CombinedOutput(); err != nil {
			t.Fatalf("chown %s %s: %v: %s", pgUser, dir, err, out)
		}
	}
	return dir
}

// StartPostgres starts a PostgreSQL server of the test's own. settings
// are extra server settings ("max_slot_wal_keep_size=64MB").
func StartPostgres(t testing.TB, settings ...string) *PGServer {
	t.Helper()
	bin, err := pgBin()
	if err != nil {
		t.Fatal(err)
	}
	u := pgUser()
	// initdb runs once per machine (per PostgreSQL version and user); each
	// server copies its result.
	pgTemplate.once.Do(func() { pgTemplate.dir, pgTemplate.err = initdbTemplate(bin, u) })
	if pgTemplate.err != nil {
		t.Fatal(pgTemplate.err)
	}
	base := pgDir(t, u)
	s := &PGServer{Port: freePort(t), Dir: filepath.Join(base, "data"), bin: bin, user: u, log: filepath.Join(base, "server.log")}
	if out, err := asPG(u, "cp", "-a", pgTemplate.dir, s.Dir).CombinedOutput(); err != nil {
		t.Fatalf("copying the initdb template: %v: %s", err, out)
	}
	s.configure(t, settings...)
	s.Start(t)
	t.Cleanup(func() { s.stop("immediate") })
	return s
}

// initdbTemplate returns a data directory made by initdb, once per
// machine for a PostgreSQL version and user (see template).
func initdbTemplate(bin, pgUser string) (string, error) {
	version := filepath.Base(filepath.Dir(bin))
	return template("dynafold-pgtemplate-"+version+"-"+pgUser, "PG_VERSION", func(base, dir string) error {
		if os.Geteuid() == 0 {
			if out, err := exec.Command("chown", pgUser, base).CombinedOutput(); err != nil {
				return fmt.Errorf("chown: %v: %s", err, out)
			}
		}
		out, err := asPG(pgUser, filepath.Join(bin, "initdb"), "-D", dir, "-U", "dynafold", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8").CombinedOutput()
		if err != nil {
			return fmt.Errorf("initdb: %v: %s", err, out)
		}
		return nil
	})
}

// configure writes the server's settings into postgresql.auto.conf.
func (s *PGServer) configure(t testing.TB, settings ...string) {
	t.Helper()
	conf := []string{
		"port = " + strconv.Itoa(s.Port),
		"listen_addresses = '127.0.0.1'",
		"unix_socket_directories = '" + s.Dir + "'",
		"fsync = off", "synchronous_commit = off", "full_page_writes = off",
		"wal_level = logical", "max_replication_slots = 16", "max_wal_senders = 16",
		"shared_buffers = 32MB", "max_connections = 100",
	}
	for _, kv := range settings {
		k, v, _ := strings.Cut(kv, "=")
		conf = append(conf, strings.TrimSpace(k)+" = '"+strings.Trim(strings.TrimSpace(v), "'")+"'")
	}
	text := strings.Join(conf, "\n") + "\n"
	cmd := asPG(s.user, "sh", "-c", "cat >> "+filepath.Join(s.Dir, "postgresql.auto.conf"))
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("configuring %s: %v: %s", s.Dir, err, out)
	}
}

// Start starts the server and waits until it accepts connections.
func (s *PGServer) Start(t testing.TB) {
	t.Helper()
	out, err := asPG(s.user, filepath.Join(s.bin, "pg_ctl"), "-D", s.Dir, "-l", s.log, "-w", "-t", "60", "start").CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(s.log)
		t.Fatalf("starting PostgreSQL on %d: %v: %s\n%s", s.Port, err, out, lastLinesOf(string(log), 20))
	}
}

// Stop stops the server (pg_ctl -m fast: connections are terminated).
func (s *PGServer) Stop(t testing.TB) {
	t.Helper()
	if err := s.stop("fast"); err != nil {
		t.Fatal(err)
	}
}

func (s *PGServer) stop(mode string) error {
	out, err := asPG(s.user, filepath.Join(s.bin, "pg_ctl"), "-D", s.Dir, "-m", mode, "-w", "-t", "60", "stop").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "Is server running?") {
		return fmt.Errorf("stopping PostgreSQL on %d: %v: %s", s.Port, err, out)
	}
	return nil
}

// Restart is `pg_ctl restart -m fast`, as an operator restarts a server.
func (s *PGServer) Restart(t testing.TB) {
	t.Helper()
	out, err := asPG(s.user, filepath.Join(s.bin, "pg_ctl"), "-D", s.Dir, "-l", s.log, "-m", "fast", "-w", "-t", "60", "restart").CombinedOutput()
	if err != nil {
		t.Fatalf("restarting PostgreSQL on %d: %v: %s", s.Port, err, out)
	}
}

// Addr is the server's host:port.
func (s *PGServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// DSN is the DSN of database db on the server.
func (s *PGServer) DSN(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword("dynafold", "dynafold"), Host: s.Addr(), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// NewDB creates a database on the server and returns its DSN.
func (s *PGServer) NewDB(t testing.TB) string {
	t.Helper()
	name := uniqueName(t, "dft", 63)
	ExecSQL(t, "postgres", s.DSN("postgres"), `CREATE DATABASE "`+name+`"`)
	return s.DSN(name)
}

// Standby makes a physical standby of s with pg_basebackup (after a fast
// checkpoint, not a spread one of minutes; WAL streamed, recovery
// configured) and starts it: promoted, it is the server a failover hands
// the application.
func (s *PGServer) Standby(t testing.TB) *PGServer {
	t.Helper()
	base := pgDir(t, s.user)
	sb := &PGServer{Port: freePort(t), Dir: filepath.Join(base, "data"), bin: s.bin, user: s.user, log: filepath.Join(base, "server.log")}
	out, err := asPG(s.user, filepath.Join(s.bin, "pg_basebackup"), "-D", sb.Dir, "-R", "-X", "stream", "-c", "fast",
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", "dynafold").CombinedOutput()
	if err != nil {
		t.Fatalf("pg_basebackup from %d: %v: %s", s.Port, err, out)
	}
	sb.configure(t)
	sb.Start(t)
	t.Cleanup(func() { sb.stop("immediate") })
	return sb
}

// Promote ends recovery on a standby and waits until it accepts writes.
func (s *PGServer) Promote(t testing.TB) {
	t.Helper()
	out, err := asPG(s.user, filepath.Join(s.bin, "pg_ctl"), "-D", s.Dir, "-w", "-t", "60", "promote").CombinedOutput()
	if err != nil {
		t.Fatalf("promoting PostgreSQL on %d: %v: %s", s.Port, err, out)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err == nil {
			var recovering bool
			err = conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering)
			conn.Close(ctx)
			if err == nil && !recovering {
				cancel()
				return
			}
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("the promoted server on %d still recovers: %v", s.Port, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePort asks the kernel for a free loopback port.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func lastLinesOf(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
