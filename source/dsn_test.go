package source_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
)

// passwords are the passwords every DSN form is tried with: plain, with
// the characters a URL must escape (@ : / % ? & = + # and a space), with
// a quote and a backslash, and with non-ASCII letters. Each holds runs of
// letters no DSN around it has, so any 4 characters of one found in the
// output are a leak.
var passwords = []struct{ name, pw string }{
	{"plain", "qZtWmKxhRvNs"},
	{"at sign", "qZt@WmKx@hRvNs"},
	{"url delimiters", "qZt/Wm@Kx:hR?vN&s=%+# !"},
	{"percent escapes", "qZt%40Wm%zzKx%2"},
	{"quote and backslash", `qZt'Wm\Kx"hRvNs`},
	{"non-ascii", "qZtWmé€Kx@hRvÑs"},
}

// windows are the 4-character runs of s (in characters, not bytes).
func windows(s string) []string {
	r := []rune(s)
	var out []string
	for i := 0; i+4 <= len(r); i++ {
		out = append(out, string(r[i:i+4]))
	}
	return out
}

func requireNoPart(t *testing.T, secret, text, where string) {
	t.Helper()
	for _, w := range windows(secret) {
		require.NotContains(t, text, w, "%s holds %q of the password %q: %s", where, w, secret, text)
	}
}

// percentAll writes every byte as %XX, in hex of the case given.
func percentAll(s, format string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}

// forms are the ways a text can carry a password: each escaping a DSN, a
// driver or a report may write it in.
func forms(pw string) map[string]string {
	js, _ := json.Marshal(pw)
	return map[string]string{
		"raw":                pw,
		"query escaped":      url.QueryEscape(pw),
		"query escaped %20":  strings.ReplaceAll(url.QueryEscape(pw), "+", "%20"),
		"path escaped":       url.PathEscape(pw),
		"userinfo escaped":   strings.TrimPrefix(url.UserPassword("", pw).String(), ":"),
		"all escaped":        percentAll(pw, "%%%02X"),
		"all escaped, lower": percentAll(pw, "%%%02x"),
		"only @ escaped":     strings.ReplaceAll(pw, "@", "%40"),
		"json":               strings.Trim(string(js), `"`),
		"json, html escaped": strings.NewReplacer("&", `\u0026`, "<", `\u003c`, ">", `\u003e`).Replace(strings.Trim(string(js), `"`)),
		"key=value escaped":  strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw),
	}
}

// dsnForms writes a DSN with pw in every form a DSN can carry it.
func dsnForms(pw string) map[string]string {
	my := mysql.NewConfig()
	my.User, my.Passwd, my.Net, my.Addr, my.DBName = "app", pw, "tcp", "127.0.0.1:3306", "shop"
	userinfo := url.URL{Scheme: "postgres", User: url.UserPassword("app", pw), Host: "127.0.0.1:5432", Path: "/shop"}
	myURL := url.URL{Scheme: "mysql", User: url.UserPassword("app", pw), Host: "127.0.0.1:3306", Path: "/shop"}
	query := "postgres://app@127.0.0.1:5432/shop?sslmode=disable&password="
	kv := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw)
	return map[string]string{
		"postgres url":                   userinfo.String(),
		"postgresql url":                 strings.Replace(userinfo.String(), "postgres:", "postgresql:", 1),
		"postgres url, query":            query + strings.ReplaceAll(url.QueryEscape(pw), "+", "%20"),
		"postgres url, query, + escaped": query + url.QueryEscape(pw),
		"postgres url, query, all %XX":   query + percentAll(pw, "%%%02X"),
		"postgres key=value":             "host=127.0.0.1 port=5432 user=app password='" + kv + "' dbname=shop sslmode=disable",
		"mysql driver form":              my.FormatDSN(),
		"mysql url":                      myURL.String(),
	}
}

// Every form of DSN, with every password, prints without any part of its
// password, however it is printed, and a driver's message quoting the
// password in any escaping is redacted in full.
func TestDSNRedactsEveryForm(t *testing.T) {
	for _, p := range passwords {
		for name, raw := range dsnForms(p.pw) {
			t.Run(p.name+"/"+name, func(t *testing.T) {
				d, err := source.ParseDSN("postgres", raw)
				require.NoError(t, err)
				js, err := json.Marshal(d)
				require.NoError(t, err)
				for how, text := range map[string]string{
					"String": d.String(), "%v": fmt.Sprintf("%v", d), "%s": fmt.Sprintf("%s", d), "%#v": fmt.Sprintf("%#v", d),
					"%+v": fmt.Sprintf("%+v", d), "json": string(js), "Identity": d.Identity(), "Redact(raw)": d.Redact(raw),
				} {
					requireNoPart(t, p.pw, text, how)
					require.Contains(t, text, "127.0.0.1", "%s keeps the host", how)
				}
				for form, pw := range forms(p.pw) {
					msg := "connecting to " + raw + ": server said: password " + pw + " refused for app@127.0.0.1 (" + pw + ")"
					err := d.RedactError(errors.New(msg))
					requireNoPart(t, p.pw, err.Error(), "a driver error with the password "+form)
					require.Contains(t, err.Error(), "refused for app@127.0.0.1", "only the password goes")
				}
			})
		}
	}
}

// The MySQL driver splits user:p@ss@tcp(…) at its last @, so a password
// may hold a raw @ there: the DSN parses with the whole password, and
// prints without any of it (sync cleanup printed app:xxxxx@ssW0rdX@tcp(…)
// when the user information pattern ran before the password).
func TestMySQLDriverFormWithRawAt(t *testing.T) {
	for _, pw := range []string{"p@ssW0rdX", "p@ss@W0rdX", "@pssW0rdX", "pssW0rdX@"} {
		t.Run(pw, func(t *testing.T) {
			raw := "app:" + pw + "@tcp(127.0.0.1:3306)/shop"
			d, err := source.ParseDSN("", raw)
			require.NoError(t, err)
			require.Equal(t, "mysql", d.Driver())
			cfg, err := mysql.ParseDSN(d.Secret())
			require.NoError(t, err)
			require.Equal(t, pw, cfg.Passwd, "the driver reads the whole password")
			require.Equal(t, "app:xxxxx@tcp(127.0.0.1:3306)/shop", d.String())
			msg := d.Redact("sync cleanup: connecting to " + raw + ": Access denied for user 'app'@'127.0.0.1' (using password: YES)")
			require.Equal(t, "sync cleanup: connecting to app:xxxxx@tcp(127.0.0.1:3306)/shop: Access denied for user 'app'@'127.0.0.1' (using password: YES)", msg)
		})
	}
}

// A postgres:// or mysql:// URL with a raw @ in its password is refused
// as invalid usage, saying to write it %40, and quoting none of it: pgx
// would take the rest of the password for the host and name it in "no
// such host ssW0rdX@127.0.0.1".
func TestURLWithRawAtIsRefused(t *testing.T) {
	for name, raw := range map[string]string{
		"postgres":           "postgres://app:p@ssW0rdX@127.0.0.1:5432/shop",
		"postgresql":         "postgresql://app:p@ssW0rdX@127.0.0.1:5432/shop?sslmode=disable",
		"two raw @":          "postgres://app:p@ss@W0rdX@127.0.0.1/shop",
		"in the user name":   "postgres://ssW0@rdX:pw@127.0.0.1/shop",
		"mysql url":          "mysql://app:p@ssW0rdX@127.0.0.1:3306/shop",
		"password ends in @": "postgres://app:pssW0rdX@@127.0.0.1/shop",
		"after a raw /":      "postgres://app:p/ssW0rdX@127.0.0.1/shop",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := source.ParseDSN("", raw)
			var de *source.DSNError
			require.ErrorAs(t, err, &de, "a typed error, which the CLI maps to exit 2")
			require.Contains(t, err.Error(), "%40")
			requireNoPart(t, "p@ssW0rdX", err.Error(), "the error")
			requireNoPart(t, "ssW0@rdX", err.Error(), "the error")
		})
	}
	// The same passwords percent-encoded, and an @ after the query, are
	// fine.
	for _, raw := range []string{
		"postgres://app:p%40ssW0rdX@127.0.0.1:5432/shop",
		"mysql://app:p%40ssW0rdX@127.0.0.1:3306/shop",
		"postgres://app:pw@127.0.0.1:5432/shop?application_name=me@laptop",
	} {
		d, err := source.ParseDSN("", raw)
		require.NoError(t, err, raw)
		require.NotContains(t, d.String(), "ssW0rdX")
	}
}

// Without a known password (a DSN that did not parse far enough to yield
// one), the patterns still take a URL's or a MySQL DSN's password whole,
// up to its last @, and a password= parameter.
func TestRedactWithoutAKnownPassword(t *testing.T) {
	var d source.DSN
	for in, want := range map[string]string{
		"dial postgres://app:p@ssW0rdX@127.0.0.1/shop: refused": "dial postgres://app:xxxxx@127.0.0.1/shop: refused",
		"dial app:p@ssW0rdX@tcp(127.0.0.1:3306)/shop: refused":  "dial app:xxxxx@tcp(127.0.0.1:3306)/shop: refused",
		"host=h password=ssW0rdX dbname=d":                      "host=h password=xxxxx dbname=d",
		"postgres://app@h/d?password=ssW0rdX&sslmode=disable":   "postgres://app@h/d?password=xxxxx&sslmode=disable",
	} {
		require.Equal(t, want, d.Redact(in))
	}
}

// RedactPassword replaces the known password only, so it can run over
// anything a command prints: what merely looks like a DSN stays.
func TestRedactPasswordLeavesOtherText(t *testing.T) {
	d, err := source.ParseDSN("", "postgres://app:qZtWmKxh@127.0.0.1/shop")
	require.NoError(t, err)
	require.Equal(t, "mailto:joe@example.com password=other xxxxx", d.RedactPassword("mailto:joe@example.com password=other qZtWmKxh"))
}
