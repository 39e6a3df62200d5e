package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/docexamples"
	"github.com/dynafold/dynafold/internal/testenv"
)

// sourceRolesDoc is the page whose SQL these tests run.
const sourceRolesDoc = repoRoot + "/docs/source-roles.md"

// roleNames are the names a run of the doc's SQL uses in place of the
// doc's own: roles and the replication slot are the whole server's, so
// each run has its own.
type roleNames struct {
	read, sync, db, publication, password string
}

func newRoleNames(t *testing.T) roleNames {
	b := make([]byte, 4)
	_, err := rand.Read(b)
	require.NoError(t, err)
	s := hex.EncodeToString(b)
	return roleNames{read: "dfread_" + s, sync: "dfsync_" + s, publication: "dfpub_" + s, password: "pw-" + s}
}

// roleSQL returns the block of docs/source-roles.md tagged tag, the doc's
// names replaced by the run's. psql's meta-commands (\password) are psql's,
// not SQL, and are left out: the test servers trust loopback logins.
func roleSQL(t *testing.T, tag string, n roleNames) string {
	t.Helper()
	b, err := docexamples.Tagged(sourceRolesDoc, "sql", tag)
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(b.Text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), `\`) {
			lines = append(lines, l)
		}
	}
	text := strings.Join(lines, "\n")
	for _, r := range []struct{ from, to string }{
		{"dynafold_read", n.read}, {"dynafold_sync", n.sync}, {"dynafold_portfolios", n.publication}, {"inventory", n.db},
	} {
		text = regexp.MustCompile(`\b`+r.from+`\b`).ReplaceAllString(text, r.to)
	}
	return strings.ReplaceAll(text, "CHANGE-ME", n.password)
}

// requireDenied requires err to be the server refusing a statement for
// lack of privilege: SQLSTATE 42501 on PostgreSQL, ER_TABLEACCESS_DENIED
// on MariaDB.
func requireDenied(t *testing.T, driver string, err error, what string) {
	t.Helper()
	require.Error(t, err, "%s should be refused", what)
	switch driver {
	case "postgres":
		var pg *pgconn.PgError
		require.ErrorAs(t, err, &pg, what)
		require.Equal(t, "42501", pg.Code, "%s: %v", what, err)
	case "mysql":
		var my *mysql.MySQLError
		require.ErrorAs(t, err, &my, what)
		require.EqualValues(t, 1142, my.Number, "%s: %v", what, err)
	}
}

// loginDSN is dsn with another user (and, for MariaDB, its password).
func loginDSN(t *testing.T, driver, dsn, user, password string) string {
	t.Helper()
	if driver == "postgres" {
		u, err := url.Parse(dsn)
		require.NoError(t, err)
		u.User = url.User(user)
		return u.String()
	}
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.User, cfg.Passwd = user, password
	return cfg.FormatDSN()
}

// TestSourceRoles runs the SQL of docs/source-roles.md as a DBA would, then
// dynafold with each login it creates: the read-only login migrates,
// verifies, diffs and exports and cannot write; the sync login syncs,
// writes its heartbeat, catches up and cleans up, and cannot write the
// mapped tables.
func TestSourceRoles(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			n := newRoleNames(t)
			ctx := context.Background()
			// Registered first, so run last: the roles go once the
			// database (whose objects they own) is gone.
			t.Cleanup(func() {
				var err error
				if d.Name == "postgres" {
					err = testenv.Exec(ctx, d.Name, testenv.PostgresDSN(t), "DROP ROLE IF EXISTS "+n.read+"; DROP ROLE IF EXISTS "+n.sync)
				} else {
					err = testenv.Exec(ctx, d.Name, testenv.MySQLDSN(t), "DROP USER IF EXISTS '"+n.read+"'@'%', '"+n.sync+"'@'%'")
				}
				if err != nil {
					t.Errorf("dropping the test's logins: %v", err)
				}
			})
			admin := d.NewDB(t)
			n.db = dbName(t, d.Name, admin)
			if d.Name == "postgres" {
				// Before the database is dropped (a logical slot holds it),
				// in case the test ended before sync cleanup.
				t.Cleanup(func() {
					_ = testenv.Exec(ctx, d.Name, admin, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '"+n.publication+"' AND NOT active")
				})
			}
			testenv.LoadSQL(t, d.Name, admin, clitest.RepoPath("testdata/portfolios/"+d.Name+".sql"))
			testenv.ExecSQL(t, d.Name, admin, roleSQL(t, d.Name+"-read", n))
			testenv.ExecSQL(t, d.Name, admin, roleSQL(t, d.Name+"-sync", n))
			readDSN := loginDSN(t, d.Name, admin, n.read, n.password)
			syncDSN := loginDSN(t, d.Name, admin, n.sync, n.password)

			client := testenv.DynamoClient(t)
			table := testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, client, table)
			flags := func(dsn string) []string {
				return []string{"--config", clitest.RepoPath("configs/portfolios.yaml"), "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
			}
			run := func(dir, dsn string, args ...string) clitest.Result {
				t.Helper()
				r := clitest.Run(t, dir, nil, append(args, flags(dsn)...)...)
				require.Equal(t, 0, r.Code, "dynafold %s\n%s", strings.Join(args, " "), r.Output())
				return r
			}

			// The read-only login: every command that reads.
			readDir := t.TempDir()
			run(readDir, readDSN, "plan")
			run(readDir, readDSN, "table", "create")
			r := run(readDir, readDSN, "migrate", "--progress", "none")
			require.Regexp(t, `total\s+10\s+10\s+0\s+0`, r.Stdout)
			run(readDir, readDSN, "verify")
			run(readDir, readDSN, "diff")
			run(readDir, readDSN, "export", "--to", "file://"+t.TempDir()+"/", "--progress", "none")
			requireDenied(t, d.Name, testenv.Exec(ctx, d.Name, readDSN, "INSERT INTO portfolios (id, name) VALUES (99, 'read-only')"), "the read-only login's INSERT")
			requireDenied(t, d.Name, testenv.Exec(ctx, d.Name, readDSN, "CREATE TABLE dynafold_probe (id int)"), "the read-only login's CREATE TABLE")

			// The sync login.
			syncDir := t.TempDir()
			var slot []string
			heartbeat := "dynafold.heartbeat"
			if d.Name == "postgres" {
				slot = []string{"--slot", n.publication}
			} else {
				heartbeat = n.db + ".dynafold_heartbeat"
			}
			r = run(syncDir, syncDSN, append([]string{"plan", "--no-target"}, slot...)...)
			require.Contains(t, r.Stdout, "ready: ")
			require.NotContains(t, r.Stdout, "not ready")

			// A running sync writes its heartbeat, and stops on SIGINT.
			cmd := clitest.Command(ctx, t, syncDir, nil, append(append([]string{"sync", "--progress", "json", "--log-level", "info",
				"--heartbeat-table", heartbeat, "--heartbeat-every", "1s"}, slot...), flags(syncDSN)...)...)
			out := &syncBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			require.NoError(t, cmd.Start())
			deadline := time.Now().Add(time.Minute)
			for {
				rows, err := testenv.QueryRows(ctx, d.Name, admin, "SELECT id FROM "+heartbeat)
				if err == nil && len(rows) == 1 {
					break
				}
				if strings.Contains(out.String(), "heartbeat failed") || time.Now().After(deadline) {
					_ = cmd.Process.Signal(syscall.SIGINT)
					_ = cmd.Wait()
					t.Fatalf("no heartbeat row in %s (%v):\n%s", heartbeat, err, out.String())
				}
				time.Sleep(200 * time.Millisecond)
			}
			interrupt(t, cmd, out)
			require.NotContains(t, out.String(), "heartbeat failed", out.String())

			testenv.ExecSQL(t, d.Name, admin, "INSERT INTO portfolios (id, name) VALUES (3, 'Synced')")
			r = run(syncDir, syncDSN, append([]string{"sync", "--until-caught-up", "--progress", "none"}, slot...)...)
			require.Contains(t, r.Stdout, "caught up with")
			got, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: "3"}, "SK": &types.AttributeValueMemberS{Value: "PORTFOLIO"}}})
			require.NoError(t, err)
			require.NotEmpty(t, got.Item, "the inserted portfolio's item, written by sync")
			requireDenied(t, d.Name, testenv.Exec(ctx, d.Name, syncDSN, "INSERT INTO portfolios (id, name) VALUES (98, 'sync')"), "the sync login's INSERT")

			r = run(syncDir, syncDSN, append([]string{"sync", "cleanup"}, slot...)...)
			if d.Name == "postgres" {
				require.Contains(t, r.Stdout, "removed replication slot "+n.publication)
				require.Contains(t, r.Stdout, "removed publication "+n.publication)
				require.Empty(t, testenv.Rows(t, d.Name, admin, "SELECT 1 FROM pg_replication_slots WHERE slot_name = '"+n.publication+"'"))
				require.Empty(t, testenv.Rows(t, d.Name, admin, "SELECT 1 FROM pg_publication WHERE pubname = '"+n.publication+"'"))
			}

			// The table sync kept is the source's.
			run(readDir, readDSN, "verify")

			if d.Name == "postgres" {
				// The other way the page names: a publication the DBA keeps.
				// Sync streams from it; cleanup drops the slot, then cannot
				// drop the publication.
				kept := n.publication + "_kept"
				t.Cleanup(func() {
					_ = testenv.Exec(ctx, d.Name, admin, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '"+kept+"' AND NOT active")
				})
				testenv.ExecSQL(t, d.Name, admin, "CREATE PUBLICATION "+kept+" FOR TABLE public.portfolios, public.servers, public.databases")
				keptDir := t.TempDir()
				run(keptDir, syncDSN, "sync", "--until-caught-up", "--progress", "none", "--slot", kept)
				r := clitest.Run(t, keptDir, nil, append([]string{"sync", "cleanup", "--slot", kept}, flags(syncDSN)...)...)
				require.Equal(t, 1, r.Code, r.Output())
				require.Contains(t, r.Stderr, "must be owner of publication "+kept)
				require.Empty(t, testenv.Rows(t, d.Name, admin, "SELECT 1 FROM pg_replication_slots WHERE slot_name = '"+kept+"'"), "the slot is dropped first")
				require.Len(t, testenv.Rows(t, d.Name, admin, "SELECT 1 FROM pg_publication WHERE pubname = '"+kept+"'"), 1, "the publication is left")
			}
		})
	}
}

// TestSourceRolesOnAReplica: the read-only login of docs/source-roles.md,
// created on a primary, migrates and diffs from its physical standby (as
// docs/verify.md advises for the diffs of pull requests), and the standby
// refuses its writes.
func TestSourceRolesOnAReplica(t *testing.T) {
	t.Parallel()
	primary := testenv.StartPostgres(t)
	admin := primary.NewDB(t)
	n := newRoleNames(t)
	n.db = dbName(t, "postgres", admin)
	testenv.LoadSQL(t, "postgres", admin, clitest.RepoPath("testdata/portfolios/postgres.sql"))
	testenv.ExecSQL(t, "postgres", admin, roleSQL(t, "postgres-read", n))
	standby := primary.Standby(t)
	readDSN := loginDSN(t, "postgres", standby.DSN(n.db), n.read, "")

	client := testenv.DynamoClient(t)
	table := testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, client, table)
	dir := t.TempDir()
	for _, args := range [][]string{{"table", "create"}, {"migrate", "--progress", "none"}, {"diff"}} {
		r := clitest.Run(t, dir, nil, append(args, "--config", clitest.RepoPath("configs/portfolios.yaml"), "--source-dsn", readDSN,
			"--endpoint", testenv.DynamoEndpoint(t), "--table", table)...)
		require.Equal(t, 0, r.Code, "dynafold %s on the standby\n%s", strings.Join(args, " "), r.Output())
	}
	err := testenv.Exec(context.Background(), "postgres", readDSN, "INSERT INTO portfolios (id, name) VALUES (99, 'replica')")
	var pg *pgconn.PgError
	require.ErrorAs(t, err, &pg, "the standby refuses a write")
	require.Contains(t, []string{"25006", "42501"}, pg.Code, "read-only transaction or no privilege: %v", err)
}

// TestSourceTLS shows what docs/source-roles.md says of TLS to the source,
// on servers of the test's own with a certificate signed by a CA the test
// makes, and on the shared servers, which have no TLS.
func TestSourceTLS(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	config := clitest.RepoPath("configs/portfolios.yaml")
	connect := func(t *testing.T, dsn string, env ...string) clitest.Result {
		t.Helper()
		return clitest.Run(t, "", env, "plan", "--no-target", "--source-attempts", "1", "--config", config, "--source-dsn", dsn)
	}
	// syncOver loads, catches up and cleans up over dsn, every exit 0.
	syncOver := func(t *testing.T, dsn string, env ...string) {
		t.Helper()
		client := testenv.DynamoClient(t)
		table := testenv.NewTableName(t)
		testenv.DeleteTableOnCleanup(t, client, table)
		dir := t.TempDir()
		flags := []string{"--config", config, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
		for _, args := range [][]string{{"table", "create"}, {"sync", "--until-caught-up", "--progress", "none"}, {"sync", "cleanup"}} {
			r := clitest.Run(t, dir, env, append(args, flags...)...)
			require.Equal(t, 0, r.Code, "dynafold %s\n%s", strings.Join(args, " "), r.Output())
		}
	}

	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		// Without TLS on the server: the default falls back to plain
		// text, require and verify-full are refused.
		plain := testenv.NewPostgresDB(t)
		testenv.LoadSQL(t, "postgres", plain, clitest.RepoPath("testdata/portfolios/postgres.sql"))
		withQuery := func(dsn, query string) string {
			u, err := url.Parse(dsn)
			require.NoError(t, err)
			u.RawQuery = query
			return u.String()
		}
		r := connect(t, withQuery(plain, ""))
		require.Equal(t, 0, r.Code, "no sslmode (prefer) against a server without TLS\n%s", r.Output())
		for _, q := range []string{"sslmode=require", "sslmode=verify-full&sslrootcert=" + pki.caFile} {
			r = connect(t, withQuery(plain, q))
			require.Equal(t, 1, r.Code, "%s against a server without TLS\n%s", q, r.Output())
			require.Contains(t, r.Stderr, "server refused TLS connection", q)
		}

		// With TLS: server.crt and server.key in the data directory,
		// owned by the server's user, ssl = on.
		srv := testenv.StartPostgres(t)
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(srv.Dir, &st))
		for name, data := range map[string][]byte{"server.crt": pki.serverCert, "server.key": pki.serverKey} {
			p := filepath.Join(srv.Dir, name)
			require.NoError(t, os.WriteFile(p, data, 0o600))
			require.NoError(t, os.Chown(p, int(st.Uid), int(st.Gid)))
		}
		testenv.ExecSQL(t, "postgres", srv.DSN("postgres"), "ALTER SYSTEM SET ssl = on")
		srv.Restart(t)
		db := srv.NewDB(t)
		testenv.LoadSQL(t, "postgres", db, clitest.RepoPath("testdata/portfolios/postgres.sql"))
		verified := withQuery(db, "sslmode=verify-full&sslrootcert="+pki.caFile)
		r = connect(t, verified)
		require.Equal(t, 0, r.Code, "verify-full with the server's CA\n%s", r.Output())
		r = connect(t, withQuery(db, "sslmode=verify-full&sslrootcert="+pki.otherCAFile))
		require.Equal(t, 1, r.Code, "verify-full with another CA\n%s", r.Output())
		require.Contains(t, r.Stderr, "unknown authority")
		syncOver(t, verified)
	})

	t.Run("mysql", func(t *testing.T) {
		t.Parallel()
		// Without TLS on the server.
		plain := testenv.NewMySQLDB(t)
		testenv.LoadSQL(t, "mysql", plain, clitest.RepoPath("testdata/portfolios/mysql.sql"))
		withParams := func(dsn string, params map[string]string) string {
			cfg, err := mysql.ParseDSN(dsn)
			require.NoError(t, err)
			q := url.Values{}
			for k, v := range params {
				q.Set(k, v)
			}
			base := cfg.FormatDSN()
			if strings.Contains(base, "?") {
				return base + "&" + q.Encode()
			}
			return base + "?" + q.Encode()
		}
		r := connect(t, withParams(plain, map[string]string{"tls": "true"}))
		require.Equal(t, 1, r.Code, "tls=true against a server without TLS\n%s", r.Output())
		require.Contains(t, r.Stderr, "server does not support TLS")
		r = connect(t, withParams(plain, map[string]string{"tls": "preferred"}))
		require.Equal(t, 0, r.Code, "tls=preferred against a server without TLS\n%s", r.Output())
		r = connect(t, withParams(plain, map[string]string{"tls": "custom"}))
		require.Equal(t, 2, r.Code, "tls=custom\n%s", r.Output())
		require.Contains(t, r.Stderr, "invalid MySQL DSN")

		// With TLS.
		srv := testenv.StartMariaDB(t, "--ssl-cert="+pki.serverCertFile, "--ssl-key="+pki.serverKeyFile)
		db := srv.NewDB(t)
		testenv.LoadSQL(t, "mysql", db, clitest.RepoPath("testdata/portfolios/mysql.sql"))
		roots := "SSL_CERT_FILE=" + pki.caFile
		verified := withParams(db, map[string]string{"tls": "true"})
		r = connect(t, verified, roots)
		require.Equal(t, 0, r.Code, "tls=true with SSL_CERT_FILE holding the CA\n%s", r.Output())
		r = connect(t, verified)
		require.Equal(t, 1, r.Code, "tls=true against the system's roots only\n%s", r.Output())
		require.Contains(t, r.Stderr, "unknown authority")
		syncOver(t, verified, roots)

		// An account with REQUIRE SSL: refused in plain text.
		testenv.ExecSQL(t, "mysql", db, "CREATE USER 'dfssl'@'%' IDENTIFIED BY 'dfssl' REQUIRE SSL; GRANT SELECT ON *.* TO 'dfssl'@'%'")
		tlsOnly := loginDSN(t, "mysql", db, "dfssl", "dfssl")
		r = connect(t, tlsOnly)
		require.Equal(t, 1, r.Code, "a REQUIRE SSL account in plain text\n%s", r.Output())
		require.Contains(t, r.Stderr, "Access denied")
		r = connect(t, withParams(tlsOnly, map[string]string{"tls": "true"}), roots)
		require.Equal(t, 0, r.Code, "a REQUIRE SSL account with tls=true\n%s", r.Output())
	})
}

// testPKI is a CA, a server certificate it signed for 127.0.0.1 and
// localhost, and another CA, as PEM files.
type testPKI struct {
	caFile, otherCAFile           string
	serverCert, serverKey         []byte
	serverCertFile, serverKeyFile string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	newCA := func(cn string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		require.NoError(t, err)
		cert, err := x509.ParseCertificate(der)
		require.NoError(t, err)
		return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	ca, caKey, caPEM := newCA("dynafold test CA")
	_, _, otherPEM := newCA("another CA")

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano() + 1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	p := testPKI{
		serverCert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		serverKey:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	p.caFile, p.otherCAFile = write("ca.pem", caPEM), write("other-ca.pem", otherPEM)
	p.serverCertFile, p.serverKeyFile = write("server.crt", p.serverCert), write("server.key", p.serverKey)
	return p
}
