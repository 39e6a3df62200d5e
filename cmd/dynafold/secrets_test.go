package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// Secrets — source passwords and AWS credentials — never appear in what a
// run prints or writes, whatever the command and however it ends. Every
// command (table create and import, plan, migrate, export, sync and sync
// cleanup, verify, diff, dump, patterns, design) runs with a DSN carrying
// a real user's password with @ : / % and non-ASCII letters (in each form
// a DSN can carry it: URL userinfo, ?password=, key=value, the MySQL
// driver form, mysql:// URLs; raw, URL-encoded and fully percent-encoded;
// by flag, DYNAFOLD_SOURCE_DSN, the mapping file and ${NAME} expansion)
// and with AWS credentials in the environment, against services that work
// and ones that fail: a source that refuses the password, one that is not
// listening, a DSN that does not parse, a URL whose password holds a raw
// @ (refused, exit 2, with the advice to write it %40), a DynamoDB or S3
// endpoint that rejects the credentials and quotes them back (and other
// credentials it was not given) in its error, and one that is not
// listening. Stdout, stderr, every file under the run's directory
// (reports, checkpoints, reject files, sync state, export manifests,
// design pages; not the exported data) and a running sync's /metrics,
// /healthz and /readyz are searched for any 4 characters in a row of any
// secret, and for each whole encoding of the passwords; every run must
// end with its expected exit code and say what proves it got as far as
// intended, so the search is not vacuous.
func TestSecrets(t *testing.T) {
	t.Parallel()
	endpoint := testenv.DynamoEndpoint(t)
	aws := newAWSSecrets("AKIA", "IQoJb3JpZ2luX2Vj")
	// Credentials of the same shapes that the runs do not know, which the
	// rejecting endpoint quotes too: only their shapes can redact them.
	foreign := newAWSSecrets("ASIA", "FwoGZXIvYXdzE")
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			h := newSecretsHarness(t, d, endpoint, aws, foreign)
			h.runAll(t)
		})
	}
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

var slug = strings.NewReplacer("/", "_", " ", "_", "=", "_", "-", "_", ",", "_", "@", "_").Replace

// slot is the replication slot (and publication) of a scenario's syncs,
// so that the scenarios running at once do not share one.
func (h *secretsHarness) slot(tag string) string {
	s := "dfsec_" + strings.ToLower(slug(tag))
	return s[:min(len(s), 40)]
}

// commands are every command of the CLI, each with a report and the files
// it may write, for one source DSN and endpoint; codes gives each
// command's acceptable exit codes and want what its output must match.
// table import, which needs an endpoint that implements ImportTable, has
// runs of its own (checkTableImport).
func (h *secretsHarness) commands(tag string, dsn dsnForm, endpoint string, codes func(cmd string) []int, want func(cmd string) string) []secretsRun {
	f := func(cmd string, args ...string) secretsRun {
		name := tag + "/" + dsn.name + "/" + cmd
		report := h.path(slug(name) + ".report.json")
		all := append(strings.Fields(cmd), args...)
		all = append(all, h.common(endpoint)...)
		all = append(all, "--source-dsn", dsn.dsn, "--report", report)
		return secretsCase(name, codes(cmd), want(cmd), all...).writes(report)
	}
	state := h.path(slug(tag) + ".sync.json")
	return []secretsRun{
		f("table create", "--output", "json"),
		f("plan", "--output", "json"),
		f("migrate --dry-run", "--temp-dir", h.path("tmp"), "--output", "markdown"),
		f("migrate", "--progress", "json", "--checkpoint", h.path(slug(tag)+".checkpoint.json"), "--reject-file", h.path(slug(tag)+".rejects.jsonl")),
		f("export", "--to", "file://"+h.path(slug(tag)+".export")+"/", "--progress", "json", "--checkpoint", h.path(slug(tag)+".export.checkpoint.json")),
		f("sync", "--until-caught-up", "--progress", "json", "--checkpoint", state, "--slot", h.slot(tag), "--give-up-after", "3s"),
		f("sync cleanup", "--checkpoint", state, "--slot", h.slot(tag)),
		f("verify", "--temp-dir", h.path("tmp"), "--output", "json"),
		f("diff", "--temp-dir", h.path("tmp")),
		f("dump", "--output", "json"),
		f("patterns", "--output", "markdown", "--items"),
		f("design html", "--out", h.path(slug(tag)+".html")),
	}
}

// readsSource reports whether a command reads the source (table create
// reads its schema, to check the mapping against it).
func readsSource(cmd string) bool {
	return slices.Contains([]string{"table create", "plan", "migrate", "migrate --dry-run", "export", "sync", "sync cleanup", "verify", "diff", "design html"}, cmd)
}

// usesDynamoDB reports whether a command fails when DynamoDB does (plan
// only warns: describing the target is optional).
func usesDynamoDB(cmd string) bool {
	return !slices.Contains([]string{"plan", "export", "sync cleanup", "design html"}, cmd)
}

// noDynamoWant is what a command that goes on without DynamoDB prints.
var noDynamoWant = map[string]string{
	"plan":         `"portfolio"`,
	"export":       `exported \d+ items`,
	"sync cleanup": `nothing to clean up|removed`,
	"design html":  `wrote .*\.html`,
}

func (h *secretsHarness) runAll(t *testing.T) {
	require.NoError(t, os.MkdirAll(h.path("tmp"), 0o755))

	// A DynamoDB endpoint nothing listens on makes the SDK retry for most
	// of a minute; AWS_MAX_ATTEMPTS cuts that short, and those runs go in
	// the background, alongside the rest. Their source works, so each fails
	// at DynamoDB, but for those that do without it.
	failsAtDynamo := func(cmd string) []int {
		switch {
		case !usesDynamoDB(cmd):
			return only(exitOK)
		case cmd == "sync":
			// DynamoDB away is waited out, up to --give-up-after.
			return []int{exitFailure, exitInterrupted}
		}
		return only(exitFailure)
	}
	dynamoWant := func(failed string) func(cmd string) string {
		return func(cmd string) string {
			if w, ok := noDynamoWant[cmd]; ok {
				return w
			}
			return failed
		}
	}
	down := "http://127.0.0.1:" + closedPort(t)
	var bg []*pendingRun
	var downCleanup secretsRun
	for _, r := range h.commands("dynamodb down", h.forms[0], down, failsAtDynamo, dynamoWant(`connection refused`)) {
		if strings.HasSuffix(r.name, "/sync cleanup") {
			downCleanup = r // after that sync has ended
			continue
		}
		bg = append(bg, h.start(t, r.withEnv("AWS_MAX_ATTEMPTS=2")))
	}

	// Against working services, in the order an operator would run them;
	// sync has runs of its own (checkSync).
	okWant := map[string]string{
		"table create":      `"created"|created table`,
		"plan":              `"portfolio"`,
		"migrate --dry-run": `10 to create`,
		"migrate":           `total\s+10\s+10\s+0\s+0`,
		"export":            `exported 10 items`,
		"verify":            `"unchanged": 10`,
		"diff":              `(?i)unchanged`,
		"dump":              `"PortfolioName":"Jeff's Plumbing"`,
		"patterns":          `3 of 3 hold`,
		"design html":       `wrote .*\.html`,
	}
	for _, r := range h.commands("ok", h.forms[0], h.endpoint, func(cmd string) []int {
		if cmd == "migrate --dry-run" {
			return only(exitDifferences) // the table is empty yet
		}
		return only(exitOK)
	}, func(cmd string) string { return okWant[cmd] }) {
		if strings.HasSuffix(r.name, "/sync") || strings.HasSuffix(r.name, "/sync cleanup") {
			continue
		}
		h.check(t, r)
	}
	h.checkFileMatches(t, "ok.html", `PortfolioName`)
	h.checkFileMatches(t, "ok.export/manifest.json", `"items": 10`)
	h.checkSync(t)
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
	h.checkBadRows(t)
	h.checkMappingErrors(t)

	// A source that refuses the password, one that is not listening, and
	// DSNs that do not parse: every command with the first form (those
	// that do not read the source succeed), then migrate with every form,
	// by flag, from the environment and from the mapping file.
	sourceFails := func(tag string, forms []dsnForm, codes []int, want string, extra ...string) {
		for _, r := range h.commands(tag, forms[0], h.endpoint, func(cmd string) []int {
			switch {
			case !readsSource(cmd):
				return only(exitOK)
			case cmd == "sync" && !slices.Contains(codes, exitUsage):
				// A source away is waited out, up to --give-up-after.
				return []int{exitFailure, exitInterrupted}
			}
			return codes
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
	// usage; so is a URL with a raw @ in its password, which pgx would
	// split at the wrong @ (and name the rest of the password as the host).
	sourceFails("bad dsn", h.badForms, only(exitUsage), `(?i)invalid (PostgreSQL DSN|MySQL DSN|mysql:// URL)`)
	sourceFails("raw @", []dsnForm{h.rawAt}, only(exitUsage), `percent-encoded as %40`)

	// A DynamoDB endpoint that answers but rejects the credentials, and
	// quotes them back with others it was not given; it also proves that
	// the runs signed with the credentials from the environment, so that
	// those were there to leak.
	rejecting, seen := rejectingEndpoint(t, h.aws, h.aws.echo()+"; also "+h.foreign.echoNamed())
	// What it said reached the output, redacted.
	const echoed = `security token included in the request is invalid: AKIA\*{16}, session token xxxxx, signed with xxxxx; also ASIA\*{16}`
	for _, r := range h.commands("dynamodb rejects", h.forms[0], rejecting, failsAtDynamo, dynamoWant(echoed)) {
		h.check(t, r)
	}
	// And an S3 endpoint that does, for export.
	h.check(t, secretsCase("s3 rejects/export", only(exitFailure), `InvalidAccessKeyId: The `+echoed,
		withDSN(h.forms[0].dsn, "export", "--to", "s3://dfsec/export/", "--s3-endpoint", rejecting, "--progress", "json", "--report", h.path("s3.report.json"))...).
		writes("s3.report.json"))
	h.checkTableImport(t, rejecting, echoed)
	require.Positive(t, seen(), "the endpoint saw no request signed with the environment's credentials")
	h.checkProfileCredentials(t)

	for _, p := range bg {
		h.finish(t, p)
	}
	h.check(t, downCleanup)
	h.checkTableImportDown(t, down)
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
	// Secrets first: a run that leaked may also have said other than
	// what was wanted.
	h.assertNoSecrets(t, r.name+": stdout", res.Stdout)
	h.assertNoSecrets(t, r.name+": stderr", res.Stderr)
	out := res.Output()
	require.Contains(t, r.codes, res.Code, "%s: exit %d\n%s", r.name, res.Code, out)
	require.Regexp(t, r.want, out, "%s: the output does not show that the run got as far as intended", r.name)
	for _, f := range r.files {
		if !filepath.IsAbs(f) {
			f = h.path(f)
		}
		require.FileExists(t, f, "%s: the run did not write %s", r.name, f)
	}
	h.checkFiles(t, r.name)
}

// checkFiles searches every file under the work directory that changed
// since it was last searched, but the mapping files this test wrote (they
// hold DSNs on purpose) and an export's data files (the items: data, not
// output).
func (h *secretsHarness) checkFiles(t *testing.T, run string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(h.work, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".json.gz") {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		stamp := fileStamp{info.Size(), info.ModTime()}
		if h.checked[p] == stamp {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h.assertNoSecrets(t, run+": file "+p, string(data))
		h.checked[p] = stamp
		return nil
	}))
}

func (h *secretsHarness) assertNoSecrets(t *testing.T, where, text string) {
	t.Helper()
	if n, secret, i := h.needles.find(text); i >= 0 {
		lo, hi := max(0, i-200), min(len(text), i+len(n)+200)
		t.Fatalf("%s contains %q of the secret %q:\n…%s…", where, n, secret, text[lo:hi])
	}
}

// pendingRun is a run started in the background.
type pendingRun struct {
	r              secretsRun
	cmd            *exec.Cmd
	cancel         context.CancelFunc
	stdout, stderr syncBuffer
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
