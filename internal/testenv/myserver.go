package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MariaDBServer is a MariaDB server of the test's own, for tests that
// stop, restart or replace the server. It logs binlogs in ROW format with
// full images, has the dynafold user the shared server has, and is
// stopped and removed when the test ends.
type MariaDBServer struct {
	Port int
	Dir  string // the data directory
	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

var myTemplate struct {
	once sync.Once
	dir  string
	err  error
}

func mariadbd() string {
	if p, err := exec.LookPath("mariadbd"); err == nil {
		return p
	}
	return "/usr/sbin/mariadbd"
}

// StartMariaDB starts a MariaDB server of the test's own. args are extra
// server options ("--server-id=7", "--gtid-domain-id=3"); the server id is
// 1 unless given.
func StartMariaDB(t testing.TB, args ...string) *MariaDBServer {
	t.Helper()
	myTemplate.once.Do(func() { myTemplate.dir, myTemplate.err = mariadbTemplate() })
	if myTemplate.err != nil {
		t.Fatal(myTemplate.err)
	}
	base, err := os.MkdirTemp("", "dynafold-mytest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	s := &MariaDBServer{Port: freePort(t), Dir: filepath.Join(base, "data")}
	if out, err := exec.Command("cp", "-a", myTemplate.dir, s.Dir).CombinedOutput(); err != nil {
		t.Fatalf("copying the MariaDB template: %v: %s", err, out)
	}
	me, _ := user.Current()
	s.args = append([]string{"--no-defaults", "--datadir=" + s.Dir, "--user=" + me.Username, "--port=" + strconv.Itoa(s.Port),
		"--bind-address=127.0.0.1", "--socket=" + filepath.Join(base, "mysql.sock"), "--pid-file=" + filepath.Join(base, "mysql.pid"),
		"--skip-name-resolve", "--innodb-buffer-pool-size=32M", "--innodb-flush-log-at-trx-commit=2", "--innodb-doublewrite=0",
		"--character-set-server=utf8mb4", "--collation-server=utf8mb4_unicode_ci",
		"--log-bin=binlog", "--binlog-format=ROW", "--binlog-row-image=FULL", "--server-id=1", "--log-bin-trust-function-creators=1",
		"--log-error=" + filepath.Join(base, "mysql.log")}, args...)
	s.Start(t)
	t.Cleanup(func() { s.kill() })
	return s
}

// mariadbTemplate returns a data directory made by mariadb-install-db
// with the dynafold user, once per machine for a user (see template).
func mariadbTemplate() (string, error) {
	me, _ := user.Current()
	return template("dynafold-mytemplate-"+me.Username, "ready", func(base, dir string) error {
		out, err := exec.Command("mariadb-install-db", "--datadir="+dir, "--user="+me.Username, "--skip-test-db",
			"--auth-root-authentication-method=socket").CombinedOutput()
		if err != nil {
			return fmt.Errorf("mariadb-install-db: %v: %s", err, out)
		}
		// Start it once on a socket alone to add the dynafold user.
		sock := filepath.Join(base, "install.sock")
		cmd := exec.Command(mariadbd(), "--no-defaults", "--datadir="+dir, "--user="+me.Username, "--skip-networking",
			"--socket="+sock, "--pid-file="+filepath.Join(base, "install.pid"), "--log-error="+filepath.Join(base, "install.log"))
		if err := cmd.Start(); err != nil {
			return err
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		var lastErr error
		for i := 0; i < 300; i++ {
			out, err := exec.Command("mariadb", "-S", sock, "-u", me.Username, "-e", `
				CREATE USER IF NOT EXISTS 'dynafold'@'%' IDENTIFIED BY 'dynafold';
				CREATE USER IF NOT EXISTS 'dynafold'@'localhost' IDENTIFIED BY 'dynafold';
				CREATE USER IF NOT EXISTS 'dynafold'@'127.0.0.1' IDENTIFIED BY 'dynafold';
				GRANT ALL PRIVILEGES ON *.* TO 'dynafold'@'%' WITH GRANT OPTION;
				GRANT ALL PRIVILEGES ON *.* TO 'dynafold'@'localhost' WITH GRANT OPTION;
				GRANT ALL PRIVILEGES ON *.* TO 'dynafold'@'127.0.0.1' WITH GRANT OPTION;
				SHUTDOWN;`).CombinedOutput()
			if err == nil {
				_ = cmd.Wait()
				return os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644)
			}
			lastErr = fmt.Errorf("%v: %s", err, out)
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("setting up the MariaDB template: %v", lastErr)
	})
}

// Start starts the server and waits until it accepts connections.
func (s *MariaDBServer) Start(t testing.TB) {
	t.Helper()
	s.cmd = exec.Command(mariadbd(), s.args...)
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting MariaDB: %v", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(s.cmd, s.done)
	deadline := time.Now().Add(time.Minute)
	for {
		db, err := sql.Open("mysql", s.DSN(""))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err = db.PingContext(ctx)
			cancel()
			db.Close()
		}
		if err == nil {
			return
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(filepath.Dir(s.Dir), "mysql.log"))
			t.Fatalf("MariaDB on %d exited while starting:\n%s", s.Port, lastLinesOf(string(log), 20))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("MariaDB on %d did not start: %v", s.Port, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop shuts the server down cleanly (SIGTERM) and waits for it.
func (s *MariaDBServer) Stop(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		t.Fatalf("MariaDB on %d did not stop", s.Port)
	}
	s.cmd = nil
}

func (s *MariaDBServer) kill() {
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		<-s.done
		s.cmd = nil
	}
}

// Addr is the server's host:port.
func (s *MariaDBServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// DSN is the driver-form DSN of database db on the server ("" for none).
func (s *MariaDBServer) DSN(db string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = "dynafold", "dynafold", "tcp", s.Addr(), db
	return cfg.FormatDSN()
}

// NewDB creates a database on the server and returns its DSN.
func (s *MariaDBServer) NewDB(t testing.TB) string {
	t.Helper()
	name := uniqueName(t, "dft", 64)
	ExecSQL(t, "mysql", s.DSN(""), "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
	return s.DSN(name)
}

// Restart stops the server cleanly and starts it again on the same port.
func (s *MariaDBServer) Restart(t testing.TB) {
	t.Helper()
	s.Stop(t)
	s.Start(t)
}
