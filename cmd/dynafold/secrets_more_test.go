package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Runs of TestSecrets for what is not a DSN or a credential of the
// environment: credentials from a profile, a row value that does not
// convert, and a mapping file whose source.dsn does not decode.

// checkProfileCredentials runs with credentials from a shared credentials
// file and none in the environment, against an endpoint that quotes them
// back: the runs know them only from the client's credential chain. The
// file is outside the work directory, which is searched.
func (h *secretsHarness) checkProfileCredentials(t *testing.T) {
	profile := newAWSSecrets("AKIA", "IQoJb3JpZ2luX2Vj")
	h.needles.addRuns(profile.keyID, "AKIA")
	h.needles.addRuns(profile.secret)
	h.needles.addRuns(profile.token)
	file := filepath.Join(t.TempDir(), "credentials")
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf("[dfsec]\naws_access_key_id = %s\naws_secret_access_key = %s\naws_session_token = %s\n",
		profile.keyID, profile.secret, profile.token)), 0o600))
	rejecting, seen := rejectingEndpoint(t, profile, profile.echo())
	env := []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=",
		"AWS_SHARED_CREDENTIALS_FILE=" + file, "AWS_CONFIG_FILE=" + filepath.Join(t.TempDir(), "none"), "AWS_PROFILE=dfsec"}
	for _, cmd := range []string{"table create", "plan"} {
		report := h.path("profile_" + slug(cmd) + ".report.json")
		args := append(strings.Fields(cmd), h.common(rejecting)...)
		args = append(args, "--source-dsn", h.forms[0].dsn, "--output", "json", "--report", report)
		codes, want := only(exitFailure), `security token included in the request is invalid: AKIA\*{16}, session token xxxxx, signed with xxxxx`
		if cmd == "plan" {
			codes = only(exitOK) // describing the target is optional: its error is in the plan
		}
		h.check(t, secretsCase("profile/"+cmd, codes, want, args...).withEnv(env...).writes(report))
	}
	require.Positive(t, seen(), "the endpoint saw no request signed with the profile's credentials")
}

// checkBadRows migrates a row whose amount is not a number: its error
// (on_error: fail, on stderr and in the report) and its reject file's
// reason (on_error: reject) quote the start of the value and its size,
// not all of it. The reject file is outside the work directory: its row
// is the data, the whole value.
func (h *secretsHarness) checkBadRows(t *testing.T) {
	mapping := func(policy string) string {
		body := fmt.Sprintf(`version: 1
source: {driver: %s, dsn: '%s'}
target: {table: %s, region: us-east-1, key: {pk: PK, sk: SK}}
entities:
  note:
    from: notes
    on_error: %s
    key: {pk: "NOTE#${id}", sk: "NOTE"}
    attributes: {Amount: {from: amount, type: N}}
`, h.d.Name, strings.ReplaceAll(h.forms[0].dsn, "'", "''"), h.rejTable, policy)
		p := h.path("notes-" + policy + ".yaml")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	report := h.path("bad_row.report.json")
	h.check(t, secretsCase("bad row/migrate", only(exitFailure), `is not a number`,
		"migrate", "--config", mapping("fail"), "--endpoint", h.endpoint, "--log-level", "debug", "--progress", "json", "--checkpoint", h.path("bad_row_fail.checkpoint.json"), "--report", report).writes(report))
	h.checkFileMatches(t, "bad_row.report.json", `…\(94 bytes\)`)

	rejects := filepath.Join(t.TempDir(), "rejects.jsonl")
	h.check(t, secretsCase("bad row/migrate, rejected", only(exitRejected), `rejected rows: `,
		"migrate", "--config", mapping("reject"), "--endpoint", h.endpoint, "--log-level", "debug", "--progress", "json", "--checkpoint", h.path("bad_row_reject.checkpoint.json"), "--reject-file", rejects))
	data, err := os.ReadFile(rejects)
	require.NoError(t, err)
	var rec struct {
		Reason string         `json:"reason"`
		Row    map[string]any `json:"row"`
	}
	require.NoError(t, json.Unmarshal(data, &rec))
	require.Contains(t, rec.Row["amount"], h.rowSecret, "the reject file keeps the row as it is")
	require.Contains(t, rec.Reason, "…(94 bytes)")
	h.assertNoSecrets(t, "the reject file's reason", rec.Reason)
}

// checkMappingErrors runs with a mapping file whose source.dsn has a tag
// it cannot be decoded as: the error names the key and line, and does not
// quote the DSN.
func (h *secretsHarness) checkMappingErrors(t *testing.T) {
	for i, form := range h.forms {
		cfg := h.mappingWithDSN(t, fmt.Sprintf("tagged-%d.yaml", i), form.dsn)
		data, err := os.ReadFile(cfg)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(string(data), "  dsn: '", "  dsn: !!int '", 1)), 0o600))
		for _, cmd := range []string{"table create", "plan"} {
			args := append(strings.Fields(cmd), "--config", cfg, "--endpoint", h.endpoint, "--table", h.table, "--output", "json")
			h.check(t, secretsCase("mapping tagged !!int/"+form.name+"/"+cmd, only(exitUsage), `source\.dsn: line \d+: |"path": "source\.dsn",\s+"message": "line \d+: `, args...))
		}
	}
}
