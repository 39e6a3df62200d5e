package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// The source TestSecrets runs against: one driver's database, a user
// with a secret password, and every way of writing a DSN for it.

// dsnForm is one way of writing the source DSN.
// dsnForm is one way of writing the source DSN.
type dsnForm struct {
	name string
	dsn  string
}

// secretsHarness is one driver's source database, reachable as a user
// with a secret password, and the table the runs migrate into.
type secretsHarness struct {
	d        testenv.Driver
	endpoint string
	aws      awsSecrets
	foreign  awsSecrets // quoted by the rejecting endpoint, unknown to the runs
	work     string     // the directory every run writes into
	table    string
	rejTable string
	// forms reach the source as the secret user; wrongForms carry another
	// secret password the server refuses; downForms name a port nothing
	// listens on; badForms do not parse; rawAt is a URL whose password
	// (a third secret) holds a raw @.
	forms, wrongForms, downForms, badForms []dsnForm
	rawAt                                  dsnForm
	// passwordInDSN is the password as forms[0] writes it (escaped in a
	// URL), for ${NAME} expansion.
	passwordInDSN string
	// rowSecret is in a source value that does not convert: an error may
	// quote the start of the value, not all of it.
	rowSecret string
	needles   *needles
	// checked are the files already searched, by their size and time, so
	// that a file no run changed is not searched again.
	checked map[string]fileStamp
	ran     int // runs checked
}

type fileStamp struct {
	size int64
	mod  time.Time
}

func newSecretsHarness(t *testing.T, d testenv.Driver, endpoint string, aws, foreign awsSecrets) *secretsHarness {
	h := &secretsHarness{d: d, endpoint: endpoint, aws: aws, foreign: foreign, work: t.TempDir(), needles: newNeedles(), checked: map[string]fileStamp{}}
	password, core := secretPassword()
	wrong, wrongCore := secretPassword()
	// A password pgx, given it raw in a URL, splits at its @: it took the
	// rest for the host, and printed "no such host …@127.0.0.1".
	atPassword := randSecret(10) + "@" + randSecret(10)
	for _, pw := range []string{password, wrong, atPassword} {
		h.needles.addRuns(pw)
		h.needles.addWhole(pw, encodings(pw)...)
	}
	h.needles.addWhole(password, percentEncodeAll(core))
	h.needles.addWhole(wrong, percentEncodeAll(wrongCore))
	for _, a := range []awsSecrets{aws, foreign} {
		h.needles.addRuns(a.keyID, "AKIA", "ASIA")
		h.needles.addRuns(a.secret)
		h.needles.addRuns(a.token)
	}
	h.rowSecret = randSecret(24)
	h.needles.addRuns(h.rowSecret)
	user := "dfsec_" + strings.ToLower(randSecret(8))
	down := closedPort(t)

	switch d.Name {
	case "postgres":
		admin := testenv.PostgresDSN(t)
		// The role is created before the database so that its cleanup
		// runs after the database (with the role's grants) is dropped.
		// It may do what sync does: replicate and publish.
		testenv.ExecSQL(t, "postgres", admin, fmt.Sprintf(`CREATE ROLE %q LOGIN SUPERUSER PASSWORD '%s'`, user, password))
		t.Cleanup(func() {
			_ = testenv.Exec(context.Background(), "postgres", admin, fmt.Sprintf(`DROP ROLE IF EXISTS %q`, user))
		})
		dbDSN := d.NewDB(t)
		h.load(t, dbDSN)
		u, err := url.Parse(dbDSN)
		require.NoError(t, err)
		host, port, db := u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/")
		pgForms := func(host, port, password string) []dsnForm {
			withUser := func(pw string, q url.Values) string {
				v := url.URL{Scheme: "postgres", User: url.UserPassword(user, pw), Host: net.JoinHostPort(host, port), Path: "/" + db, RawQuery: q.Encode()}
				return v.String()
			}
			query := func(pw string) string {
				v := url.URL{Scheme: "postgres", User: url.User(user), Host: net.JoinHostPort(host, port), Path: "/" + db}
				return v.String() + "?sslmode=disable&password=" + pw
			}
			return []dsnForm{
				{"url userinfo", withUser(password, url.Values{"sslmode": {"disable"}})},
				// libpq, and pgx after it, decode only %XX in a URL: a
				// space is %20, and + is a plus sign. Go's url.Values
				// write a space as +, which pgx reads as another password.
				{"url query", query(strings.ReplaceAll(url.QueryEscape(password), "+", "%20"))},
				{"url query, + for space", query(url.QueryEscape(password))},
				{"url query all escaped", query(percentEncodeAll(password))},
				{"key=value", fmt.Sprintf("host=%s port=%s user=%s password='%s' dbname=%s sslmode=disable", host, port, user, password, db)},
			}
		}
		h.forms = pgForms(host, port, password)
		h.passwordInDSN = strings.TrimPrefix(url.UserPassword("", password).String(), ":")
		h.downForms = pgForms("127.0.0.1", down, password)
		// The local server trusts every connection from loopback, so a
		// refused password comes from a server that asks for one.
		h.wrongForms = pgForms("127.0.0.1", fakePostgres(t), wrong)
		h.badForms = []dsnForm{
			{"bad port", "postgres://" + user + ":" + url.QueryEscape(password) + "@127.0.0.1:notaport/" + db},
			{"bad port, password in query", "postgres://" + user + "@127.0.0.1:notaport/" + db + "?password=" + url.QueryEscape(password)},
			{"bad escape in query password", "postgres://" + user + "@127.0.0.1:" + down + "/" + db + "?password=" + core + "%zz"},
			{"bad escape in password", "postgres://" + user + ":" + core + "%zz@127.0.0.1:" + down + "/" + db},
		}
		h.rawAt = dsnForm{"url, raw @ in the password", "postgres://" + user + ":" + atPassword + "@" + net.JoinHostPort(host, port) + "/" + db + "?sslmode=disable"}
	case "mysql":
		admin := testenv.MySQLDSN(t)
		testenv.ExecSQL(t, "mysql", admin, fmt.Sprintf(`CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY '%s'`, user, password))
		t.Cleanup(func() {
			_ = testenv.Exec(context.Background(), "mysql", admin, fmt.Sprintf(`DROP USER IF EXISTS '%s'@'127.0.0.1'`, user))
		})
		dbDSN := d.NewDB(t)
		h.load(t, dbDSN)
		cfg, err := mysql.ParseDSN(dbDSN)
		require.NoError(t, err)
		// It may do what sync does: read the binlog as a replica.
		testenv.ExecSQL(t, "mysql", dbDSN, fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'127.0.0.1'", user))
		myForms := func(addr, password string) []dsnForm {
			c := mysql.NewConfig()
			c.User, c.Passwd, c.Net, c.Addr, c.DBName = user, password, "tcp", addr, cfg.DBName
			u := url.URL{Scheme: "mysql", User: url.UserPassword(user, password), Host: addr, Path: "/" + cfg.DBName}
			return []dsnForm{{"driver form", c.FormatDSN()}, {"mysql url", u.String()}}
		}
		h.forms = myForms(cfg.Addr, password)
		h.passwordInDSN = password
		h.downForms = myForms("127.0.0.1:"+down, password)
		h.wrongForms = myForms(cfg.Addr, wrong)
		h.badForms = []dsnForm{
			{"unclosed address", user + ":" + password + "@tcp(127.0.0.1:" + down + "/" + cfg.DBName},
			{"bad escape in url", "mysql://" + user + ":" + core + "%zz@127.0.0.1:" + down + "/" + cfg.DBName},
		}
		h.rawAt = dsnForm{"mysql url, raw @ in the password", "mysql://" + user + ":" + atPassword + "@" + cfg.Addr + "/" + cfg.DBName}
	}

	client := testenv.DynamoClient(t)
	h.table, h.rejTable = testenv.NewTableName(t), testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, client, h.table)
	testenv.DeleteTableOnCleanup(t, client, h.rejTable)
	return h
}

// load fills the source: the portfolio example, a table with a row the
// reject mapping rejects (a NULL in its key), and one whose amount is not
// a number: 70 digits, then rowSecret.
func (h *secretsHarness) load(t *testing.T, dsn string) {
	testenv.LoadSQL(t, h.d.Name, dsn, clitest.RepoPath("testdata/portfolios/"+h.d.Name+".sql"))
	testenv.ExecSQL(t, h.d.Name, dsn, `CREATE TABLE parts (id int PRIMARY KEY, bin varchar(20) NULL);
		INSERT INTO parts VALUES (1, 'A1'), (2, NULL), (3, 'C3');`)
	testenv.ExecSQL(t, h.d.Name, dsn, `CREATE TABLE notes (id int PRIMARY KEY, amount varchar(400) NULL);
		INSERT INTO notes VALUES (1, '`+strings.Repeat("1234567890", 7)+h.rowSecret+`');`)
}
