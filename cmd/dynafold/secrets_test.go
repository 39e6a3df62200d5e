package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// Secrets — source passwords and AWS credentials — never appear in what a
// run prints or writes, whatever the command and however it ends. Every
// command runs with a DSN carrying a real user's distinctive password (in
// each form a DSN can carry it: URL userinfo, ?password=, key=value, the
// MySQL driver form, mysql:// URLs; raw, URL-encoded and fully
// percent-encoded; by flag, DYNAFOLD_SOURCE_DSN, the mapping file and
// ${NAME} expansion) and with AWS credentials in the environment, against
// services that work and ones that fail: a source that refuses the
// password, one that is not listening, a DSN that does not parse, a
// DynamoDB endpoint that rejects the credentials and one that is not
// listening. Stdout, stderr and every file under the run's directory
// (reports, checkpoints, reject files, spill files) are searched for each
// form of each secret; every run must end with its expected exit code and
// say what proves it got as far as intended, so the search is not vacuous.
func TestSecrets(t *testing.T) {
	t.Parallel()
	endpoint := testenv.DynamoEndpoint(t)
	aws := newAWSSecrets()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			h := newSecretsHarness(t, d, endpoint, aws)
			h.runAll(t)
		})
	}
}

// awsSecrets are credentials the standard AWS chain reads from the
// environment. Local endpoints accept any signature, so they work.
type awsSecrets struct {
	keyID, secret, token string
}

func newAWSSecrets() awsSecrets {
	r := randHex()
	return awsSecrets{
		keyID:  "AKIASECRETSTEST" + strings.ToUpper(r),
		secret: "S3cr3tAwsKey" + r + "xK9",
		token:  "S3cr3tAwsSessionToken" + r + "zQ7",
	}
}

func (a awsSecrets) env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + a.keyID, "AWS_SECRET_ACCESS_KEY=" + a.secret, "AWS_SESSION_TOKEN=" + a.token}
}

func randHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// secretPassword makes a distinctive password with the characters that
// DSNs must escape (URL delimiters, %, space) and a core that every
// partial escaping keeps intact, so that a leak of any part is found.
func secretPassword(prefix string) (password, core string) {
	core = prefix + "-" + randHex()
	return core + "/p@ss:w?rd&x=%+# !", core
}

// percentEncodeAll escapes every byte, as some tools write passwords: a
// form no canonical escaping produces, so redaction cannot match it by
// re-escaping the password.
func percentEncodeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// needlesFor lists the forms a password can be written in.
func needlesFor(password, core string) []string {
	userinfo := strings.TrimPrefix(url.UserPassword("", password).String(), ":")
	return []string{password, core, url.QueryEscape(password), url.PathEscape(password), userinfo,
		percentEncodeAll(password), strings.ToLower(percentEncodeAll(password)), percentEncodeAll(core)}
}

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
	work     string // the directory every run writes into
	table    string
	rejTable string
	// forms reach the source as the secret user; wrongForms carry another
	// secret password the server refuses; downForms name a port nothing
	// listens on; badForms do not parse.
	forms, wrongForms, downForms, badForms []dsnForm
	// passwordInDSN is the password as forms[0] writes it (escaped in a
	// URL), for ${NAME} expansion.
	passwordInDSN string
	needles       []string
	ran           int // runs checked
}

func newSecretsHarness(t *testing.T, d testenv.Driver, endpoint string, aws awsSecrets) *secretsHarness {
	h := &secretsHarness{d: d, endpoint: endpoint, aws: aws, work: t.TempDir()}
	password, core := secretPassword("S3cr3t-" + d.Name)
	wrong, wrongCore := secretPassword("Wr0ngS3cr3t-" + d.Name)
	h.needles = append(needlesFor(password, core), needlesFor(wrong, wrongCore)...)
	h.needles = append(h.needles, aws.keyID, aws.secret, aws.token)
	user := "dfsec_" + randHex()
	down := closedPort(t)

	switch d.Name {
	case "postgres":
		admin := testenv.PostgresDSN(t)
		// The role is created before the database so that its cleanup
		// runs after the database (with the role's grants) is dropped.
		testenv.ExecSQL(t, "postgres", admin, fmt.Sprintf(`CREATE ROLE %q LOGIN PASSWORD '%s'`, user, password))
		t.Cleanup(func() {
			_ = testenv.Exec(context.Background(), "postgres", admin, fmt.Sprintf(`DROP ROLE IF EXISTS %q`, user))
		})
		dbDSN := d.NewDB(t)
		h.load(t, dbDSN)
		testenv.ExecSQL(t, "postgres", dbDSN, fmt.Sprintf(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO %q`, user))
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
		testenv.ExecSQL(t, "mysql", dbDSN, fmt.Sprintf("GRANT SELECT ON `%s`.* TO '%s'@'127.0.0.1'", cfg.DBName, user))
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
	}

	client := testenv.DynamoClient(t)
	h.table, h.rejTable = testenv.NewTableName(t), testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, client, h.table)
	testenv.DeleteTableOnCleanup(t, client, h.rejTable)
	return h
}

// load fills the source: the portfolio example and a table with a row the
// reject mapping rejects (a NULL in its key).
func (h *secretsHarness) load(t *testing.T, dsn string) {
	testenv.LoadSQL(t, h.d.Name, dsn, clitest.RepoPath("testdata/portfolios/"+h.d.Name+".sql"))
	testenv.ExecSQL(t, h.d.Name, dsn, `CREATE TABLE parts (id int PRIMARY KEY, bin varchar(20) NULL);
		INSERT INTO parts VALUES (1, 'A1'), (2, NULL), (3, 'C3');`)
}

// secretsRun is one invocation and what must come of it.
type secretsRun struct {
	name  string
	args  []string
	env   []string
	codes []int          // the acceptable exit codes
	want  *regexp.Regexp // output that proves the run got where intended
	files []string       // files (under work) the run must have written
}

func secretsCase(name string, codes []int, want string, args ...string) secretsRun {
	return secretsRun{name: name, args: args, codes: codes, want: regexp.MustCompile(want)}
}

// only is a run's one acceptable exit code.
func only(code int) []int { return []int{code} }

func (r secretsRun) withEnv(env ...string) secretsRun {
	r.env = append(slices.Clone(r.env), env...)
	return r
}

func (r secretsRun) withArgs(args ...string) secretsRun {
	r.args = append(slices.Clone(r.args), args...)
	return r
}

func (r secretsRun) writes(files ...string) secretsRun {
	r.files = append(slices.Clone(r.files), files...)
	return r
}

// common are the flags of every run: the portfolio mapping, the table,
// and debug logging, so that whatever is logged is searched too.
func (h *secretsHarness) common(endpoint string) []string {
	return []string{"--config", clitest.RepoPath("configs/portfolios.yaml"), "--endpoint", endpoint, "--table", h.table, "--log-level", "debug"}
}

func (h *secretsHarness) path(name string) string { return filepath.Join(h.work, name) }

// commands are every command of the CLI, each with a report and the files
// it may write, for one source DSN and endpoint; codes gives each
// command's acceptable exit codes and want what its output must match.
func (h *secretsHarness) commands(tag string, dsn dsnForm, endpoint string, codes func(cmd string) []int, want func(cmd string) string) []secretsRun {
	slug := strings.NewReplacer("/", "_", " ", "_", "=", "_", "-", "_").Replace
	f := func(cmd string, args ...string) secretsRun {
		name := tag + "/" + dsn.name + "/" + cmd
		report := h.path(slug(name) + ".report.json")
		all := append(strings.Fields(cmd), args...)
		all = append(all, h.common(endpoint)...)
		all = append(all, "--source-dsn", dsn.dsn, "--report", report)
		return secretsCase(name, codes(cmd), want(cmd), all...).writes(report)
	}
	return []secretsRun{
		f("table create", "--output", "json"),
		f("plan", "--output", "json"),
		f("migrate --dry-run", "--temp-dir", h.path("tmp"), "--output", "markdown"),
		f("migrate", "--progress", "json", "--checkpoint", h.path(slug(tag)+".checkpoint.json"), "--reject-file", h.path(slug(tag)+".rejects.jsonl")),
		f("verify", "--temp-dir", h.path("tmp"), "--output", "json"),
		f("diff", "--temp-dir", h.path("tmp")),
		f("dump", "--output", "json"),
		f("patterns", "--output", "markdown", "--items"),
	}
}

// readsSource reports whether a command reads the source (table create
// reads its schema, to check the mapping against it).
func readsSource(cmd string) bool {
	return slices.Contains([]string{"table create", "plan", "migrate", "migrate --dry-run", "verify", "diff"}, cmd)
}

func (h *secretsHarness) runAll(t *testing.T) {
	require.NoError(t, os.MkdirAll(h.path("tmp"), 0o755))

	// A DynamoDB endpoint nothing listens on makes the SDK retry for most
	// of a minute; AWS_MAX_ATTEMPTS cuts that short, and those runs go in
	// the background, alongside the rest. Their source works, so each fails
	// at DynamoDB (plan only warns: describing the target is optional).
	failsAtDynamo := func(cmd string) []int {
		if cmd == "plan" {
			return only(exitOK)
		}
		return only(exitFailure)
	}
	down := "http://127.0.0.1:" + closedPort(t)
	var bg []*pendingRun
	for _, r := range h.commands("dynamodb down", h.forms[0], down, failsAtDynamo, func(cmd string) string {
		if cmd == "plan" {
			return `"portfolio"`
		}
		return `connection refused`
	}) {
		bg = append(bg, h.start(t, r.withEnv("AWS_MAX_ATTEMPTS=2")))
	}

	// Against working services, in the order an operator would run them.
	okWant := map[string]string{
		"table create":      `"created"|created table`,
		"plan":              `"portfolio"`,
		"migrate --dry-run": `10 to create`,
		"migrate":           `total\s+10\s+10\s+0\s+0`,
		"verify":            `"unchanged": 10`,
		"diff":              `(?i)unchanged`,
		"dump":              `"PortfolioName":"Jeff's Plumbing"`,
		"patterns":          `3 of 3 hold`,
	}
	for _, r := range h.commands("ok", h.forms[0], h.endpoint, func(cmd string) []int {
		if cmd == "migrate --dry-run" {
			return only(exitDifferences) // the table is empty yet
		}
		return only(exitOK)
	}, func(cmd string) string { return okWant[cmd] }) {
		h.check(t, r)
	}
	withDSN := func(dsn string, args ...string) []string {
		return append(append(args, h.common(h.endpoint)...), "--source-dsn", dsn)
	}
	// The migrate above left its checkpoint: this one resumes from it.
	h.check(t, secretsCase("ok/migrate again", only(exitOK), `"event":"progress"`,
		withDSN(h.forms[0].dsn, "migrate", "--progress", "json", "--checkpoint", h.path("ok.checkpoint.json"))...).
		writes("ok.checkpoint.json"))
	h.check(t, secretsCase("ok/dry-run after migrate", only(exitOK), `(?i)unchanged`,
		withDSN(h.forms[0].dsn, "migrate", "--dry-run", "--report", h.path("dryrun2.json"))...).writes("dryrun2.json"))

	// Every DSN form reaches the source (verify reads source and table).
	for _, form := range h.forms {
		h.check(t, secretsCase("form "+form.name, only(exitOK), okWant["verify"], withDSN(form.dsn, "verify", "--output", "json")...))
	}

	// The DSN from the environment, from the mapping file, and from the
	// mapping file with the password in ${NAME}.
	verifyNoDSN := append([]string{"verify", "--output", "json"}, h.common(h.endpoint)...)
	h.check(t, secretsCase("env DYNAFOLD_SOURCE_DSN", only(exitOK), okWant["verify"], verifyNoDSN...).withEnv("DYNAFOLD_SOURCE_DSN="+h.forms[0].dsn))
	for i, form := range h.forms {
		cfg := h.mappingWithDSN(t, fmt.Sprintf("portfolios-%d.yaml", i), form.dsn)
		h.check(t, secretsCase("mapping file "+form.name, only(exitOK), okWant["verify"], replaceConfig(verifyNoDSN, cfg)...))
	}
	ref := strings.Replace(h.forms[0].dsn, h.passwordInDSN, "${DF_SECRET_PASSWORD}", 1)
	require.NotEqual(t, h.forms[0].dsn, ref)
	cfg := h.mappingWithDSN(t, "portfolios-ref.yaml", ref)
	h.checkFileMatches(t, "portfolios-ref.yaml", regexp.QuoteMeta("${DF_SECRET_PASSWORD}"))
	h.check(t, secretsCase("mapping file ${NAME}", only(exitOK), okWant["verify"], replaceConfig(verifyNoDSN, cfg)...).
		withEnv("DF_SECRET_PASSWORD="+h.passwordInDSN))

	// Rejected rows: the reject file, checkpoint and report of a run that
	// exits 5, with the DSN in the mapping file.
	rej := h.rejectMapping(t)
	rejFlags := []string{"--config", rej, "--endpoint", h.endpoint, "--log-level", "debug"}
	h.check(t, secretsCase("rejects/table create", only(exitOK), `created table`, append([]string{"table", "create"}, rejFlags...)...))
	h.check(t, secretsCase("rejects/migrate", only(exitRejected), `rejected rows: `,
		append([]string{"migrate", "--progress", "json", "--report", h.path("rejects.report.json"), "--reject-file", h.path("rejects.jsonl"), "--checkpoint", h.path("rejects.checkpoint.json")}, rejFlags...)...).
		writes("rejects.report.json", "rejects.jsonl", "rejects.checkpoint.json"))
	h.checkFileMatches(t, "rejects.jsonl", `"reason"`)

	// A source that refuses the password, one that is not listening, and
	// DSNs that do not parse: every command with the first form (those
	// that do not read the source succeed), then migrate with every form,
	// by flag, from the environment and from the mapping file.
	sourceFails := func(tag string, forms []dsnForm, codes []int, want string, extra ...string) {
		for _, r := range h.commands(tag, forms[0], h.endpoint, func(cmd string) []int {
			if readsSource(cmd) {
				return codes
			}
			return only(exitOK)
		}, func(cmd string) string {
			if readsSource(cmd) {
				return want
			}
			return `.`
		}) {
			h.check(t, r.withArgs(extra...))
		}
		for i, form := range forms {
			args := withDSN(form.dsn, "migrate", "--progress", "json", "--report", h.path("fail.report.json"))
			h.check(t, secretsCase(tag+"/migrate/"+form.name, codes, want, args...).withArgs(extra...).writes("fail.report.json"))
			noDSN := args[:len(args)-2]
			h.check(t, secretsCase(tag+"/migrate env/"+form.name, codes, want, noDSN...).withArgs(extra...).
				withEnv("DYNAFOLD_SOURCE_DSN="+form.dsn).writes("fail.report.json"))
			cfg := h.mappingWithDSN(t, fmt.Sprintf("fail-%d.yaml", i), form.dsn)
			h.check(t, secretsCase(tag+"/migrate mapping file/"+form.name, codes, want, replaceConfig(noDSN, cfg)...).withArgs(extra...).writes("fail.report.json"))
		}
	}
	authFailed := map[string]string{"postgres": `password authentication failed`, "mysql": `Access denied`}[h.d.Name]
	sourceFails("wrong password", h.wrongForms, only(exitFailure), authFailed)
	// Two attempts: the retry's warning is searched too, without the
	// seven seconds of backoff five attempts take.
	sourceFails("source down", h.downForms, only(exitFailure), `connection refused`, "--source-attempts", "2")
	// A DSN that does not parse is refused before connecting, as invalid
	// usage.
	sourceFails("bad dsn", h.badForms, only(exitUsage), `(?i)invalid (PostgreSQL DSN|MySQL DSN|mysql:// URL)`)

	// A DynamoDB endpoint that answers but rejects the credentials; it
	// also proves that the runs signed with the credentials from the
	// environment, so that those were there to leak.
	rejecting, seen := rejectingDynamo(t, h.aws)
	for _, r := range h.commands("dynamodb rejects", h.forms[0], rejecting, failsAtDynamo, func(cmd string) string {
		if cmd == "plan" {
			return `"portfolio"`
		}
		return `UnrecognizedClientException|security token`
	}) {
		h.check(t, r)
	}
	require.Positive(t, seen(), "the endpoint saw no request signed with the environment's credentials")

	for _, p := range bg {
		h.finish(t, p)
	}
	t.Logf("%d runs, no secret in their output or files", h.ran)
}

func replaceConfig(args []string, cfg string) []string {
	out := slices.Clone(args)
	i := slices.Index(out, "--config")
	out[i+1] = cfg
	return out
}

// mappingWithDSN writes the portfolio mapping with source.dsn set.
func (h *secretsHarness) mappingWithDSN(t *testing.T, name, dsn string) string {
	data, err := os.ReadFile(clitest.RepoPath("configs/portfolios.yaml"))
	require.NoError(t, err)
	re := regexp.MustCompile(`(?m)^  dsn: .*$`)
	require.True(t, re.Match(data))
	data = re.ReplaceAllLiteral(data, []byte("  dsn: '"+strings.ReplaceAll(dsn, "'", "''")+"'"))
	p := h.path(name)
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

// rejectMapping maps parts with on_error: reject; row 2 has a NULL key.
func (h *secretsHarness) rejectMapping(t *testing.T) string {
	body := fmt.Sprintf(`version: 1
source: {driver: %s, dsn: '%s'}
target: {table: %s, region: us-east-1, key: {pk: PK, sk: SK}}
entities:
  part:
    from: parts
    on_error: reject
    key: {pk: "BIN#${bin}", sk: "PART#${id}"}
`, h.d.Name, strings.ReplaceAll(h.forms[0].dsn, "'", "''"), h.rejTable)
	p := h.path("rejects.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func (h *secretsHarness) checkFileMatches(t *testing.T, name, pattern string) {
	data, err := os.ReadFile(h.path(name))
	require.NoError(t, err)
	require.Regexp(t, pattern, string(data))
}

// check runs r in the work directory and checks it.
func (h *secretsHarness) check(t *testing.T, r secretsRun) {
	t.Helper()
	h.clear(t, r)
	env := append(h.aws.env(), r.env...)
	started := time.Now()
	res := clitest.Run(t, h.work, env, r.args...)
	if d := time.Since(started); d > 3*time.Second {
		t.Logf("%s took %v", r.name, d.Round(100*time.Millisecond))
	}
	h.verify(t, r, res)
}

// clear removes the files r must write, so that their presence proves it.
func (h *secretsHarness) clear(t *testing.T, r secretsRun) {
	for _, f := range r.files {
		if !filepath.IsAbs(f) {
			f = h.path(f)
		}
		if strings.HasSuffix(f, ".checkpoint.json") {
			continue // the run resumes from it, and rewrites it
		}
		require.NoError(t, os.RemoveAll(f))
	}
}

func (h *secretsHarness) verify(t *testing.T, r secretsRun, res clitest.Result) {
	t.Helper()
	h.ran++
	out := res.Output()
	require.Contains(t, r.codes, res.Code, "%s: exit %d\n%s", r.name, res.Code, out)
	require.Regexp(t, r.want, out, "%s: the output does not show that the run got as far as intended", r.name)
	for _, f := range r.files {
		if !filepath.IsAbs(f) {
			f = h.path(f)
		}
		require.FileExists(t, f, "%s: the run did not write %s", r.name, f)
	}
	h.assertNoSecrets(t, r.name+": stdout", res.Stdout)
	h.assertNoSecrets(t, r.name+": stderr", res.Stderr)
	require.NoError(t, filepath.WalkDir(h.work, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if strings.HasSuffix(p, ".yaml") {
			return nil // the mapping files this test wrote hold DSNs on purpose
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h.assertNoSecrets(t, r.name+": file "+p, string(data))
		return nil
	}))
}

func (h *secretsHarness) assertNoSecrets(t *testing.T, where, text string) {
	t.Helper()
	for _, n := range h.needles {
		if i := strings.Index(text, n); i >= 0 {
			lo, hi := max(0, i-200), min(len(text), i+len(n)+200)
			t.Fatalf("%s contains the secret %q:\n…%s…", where, n, text[lo:hi])
		}
	}
}

// pendingRun is a run started in the background.
type pendingRun struct {
	r              secretsRun
	cmd            *exec.Cmd
	cancel         context.CancelFunc
	stdout, stderr bytes.Buffer
}

func (h *secretsHarness) start(t *testing.T, r secretsRun) *pendingRun {
	h.clear(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	p := &pendingRun{r: r, cancel: cancel}
	p.cmd = clitest.Command(ctx, t, h.work, append(h.aws.env(), r.env...), r.args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	require.NoError(t, p.cmd.Start())
	return p
}

func (h *secretsHarness) finish(t *testing.T, p *pendingRun) {
	t.Helper()
	err := p.cmd.Wait()
	p.cancel()
	res := clitest.Result{Stdout: p.stdout.String(), Stderr: p.stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.Code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", p.r.name, err)
	}
	h.verify(t, p.r, res)
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return strconv.Itoa(port)
}

// fakePostgres listens for PostgreSQL connections, asks for the password
// in clear text and refuses it, quoting it back in the error as a
// careless server or proxy might: the message of a driver error must be
// redacted too. It returns the port.
func fakePostgres(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go refusePassword(c)
		}
	}()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

func refusePassword(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	be := pgproto3.NewBackend(c, c)
	msg, err := be.ReceiveStartupMessage()
	for err == nil {
		if _, ok := msg.(*pgproto3.SSLRequest); !ok {
			break
		}
		if _, err = c.Write([]byte("N")); err == nil {
			msg, err = be.ReceiveStartupMessage()
		}
	}
	startup, ok := msg.(*pgproto3.StartupMessage)
	if err != nil || !ok {
		return
	}
	be.Send(&pgproto3.AuthenticationCleartextPassword{})
	if be.Flush() != nil {
		return
	}
	if be.SetAuthType(pgproto3.AuthTypeCleartextPassword) != nil {
		return
	}
	m, err := be.Receive()
	if err != nil {
		return
	}
	pw, _ := m.(*pgproto3.PasswordMessage)
	got := ""
	if pw != nil {
		got = pw.Password
	}
	be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01",
		Message: fmt.Sprintf("password authentication failed for user %q (password %q)", startup.Parameters["user"], got)})
	_ = be.Flush()
}

// rejectingDynamo answers every request as DynamoDB does a request signed
// with unknown credentials, and counts the requests signed with creds'
// access key and session token.
func rejectingDynamo(t *testing.T, creds awsSecrets) (endpoint string, seen func() int) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if strings.Contains(r.Header.Get("Authorization"), "Credential="+creds.keyID+"/") && r.Header.Get("X-Amz-Security-Token") == creds.token {
			mu.Lock()
			n++
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("x-amzn-RequestId", "SECRETSTEST")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#UnrecognizedClientException","message":"The security token included in the request is invalid."}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}
