package source

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// DSN is a data source name whose password never leaks: String, Format and
// JSON marshalling all redact it, so a DSN can be logged or put in an error
// without thinking. Only drivers call Secret to connect.
type DSN struct {
	driver string
	raw    string
	// passwords are the password as the DSN writes it, decoded, and as
	// the driver will send it, when the two differ (see postgresPassword).
	passwords []string
}

// ParseDSN recognises PostgreSQL URLs and key=value strings, MySQL
// driver DSNs (user:pass@tcp(host:port)/db) and mysql:// URLs. A DSN whose
// form names its driver (postgres://, mysql://, @tcp(…)) decides the driver,
// so one mapping file can be run against either database with --source-dsn;
// otherwise driver ("postgres" or "mysql") is used.
func ParseDSN(driver, raw string) (DSN, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return DSN{}, &DSNError{Msg: "empty DSN"}
	}
	if err := checkURLUserinfo(raw); err != nil {
		return DSN{}, err
	}
	if inferred := inferDriver(raw); inferred != "" {
		driver = inferred
	}
	if driver == "" {
		return DSN{}, &DSNError{Msg: "cannot tell the driver from the DSN; set source.driver"}
	}
	d := DSN{driver: driver, raw: raw}
	switch driver {
	case "postgres":
		cfg, err := pgconn.ParseConfig(raw)
		if err != nil {
			// pgx's message may quote the DSN; do not pass it on.
			return DSN{}, &DSNError{Msg: "invalid PostgreSQL DSN (expected postgres://user:password@host:port/database?sslmode=… or host=… user=… dbname=…)"}
		}
		d.passwords = postgresPasswords(raw, cfg)
	case "mysql":
		if strings.HasPrefix(raw, "mysql://") {
			conv, err := mysqlURLToDSN(raw)
			if err != nil {
				return DSN{}, err
			}
			d.raw = conv
		}
		cfg, err := mysql.ParseDSN(d.raw)
		if err != nil {
			// The driver's message may quote the DSN; do not pass it on.
			return DSN{}, &DSNError{Msg: "invalid MySQL DSN (expected user:password@tcp(host:port)/database or mysql://user:password@host:port/database)"}
		}
		if cfg.Passwd != "" {
			d.passwords = []string{cfg.Passwd}
		}
	default:
		return DSN{}, &DSNError{Msg: fmt.Sprintf("unknown driver %q (postgres or mysql)", driver)}
	}
	return d, nil
}

// DSNError is a DSN that cannot be used as it is written: invalid usage.
// Its message never quotes the DSN.
type DSNError struct{ Msg string }

func (e *DSNError) Error() string { return e.Msg }

// checkURLUserinfo refuses a postgres:// or mysql:// URL with an @ that
// is not percent-encoded before its query, other than the one that ends
// the user information: in the user or the password, such an @ ends it
// early, and pgx would take the rest of the password for the host, try to
// connect to it and name it in its error ("no such host ssW0rdX@db");
// after a raw / in the password, the @ is in the path, and the password
// is cut at the /. Either way the DSN does not mean what it says, so it is
// refused, without quoting it.
func checkURLUserinfo(raw string) error {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil
	}
	switch scheme {
	case "postgres", "postgresql", "mysql":
	default:
		return nil
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	_, path, _ := strings.Cut(rest, "/")
	if strings.Count(rest, "@") < 2 && !strings.Contains(path, "@") {
		return nil
	}
	return &DSNError{Msg: fmt.Sprintf("the %s:// URL has an @ that does not end the user information: in a URL, an @ in the user name or password must be percent-encoded as %%40 (and / as %%2F, : as %%3A, ? as %%3F, # as %%23, %% as %%25), as in %s://app:p%%40ss@db.internal/app", scheme, scheme)}
}

// InferDriver is the driver a DSN's form names ("postgres" for postgres://
// and postgresql:// URLs, "mysql" for mysql:// and user:pw@tcp(…)/db), or ""
// when its form names none (a key=value string).
func InferDriver(raw string) string { return inferDriver(strings.TrimSpace(raw)) }

func inferDriver(raw string) string {
	switch {
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		return "postgres"
	case strings.HasPrefix(raw, "mysql://"), strings.Contains(raw, "@tcp("), strings.Contains(raw, "@unix("):
		return "mysql"
	}
	return ""
}

// Driver returns "postgres" or "mysql".
func (d DSN) Driver() string { return d.driver }

// IsZero reports whether the DSN is unset.
func (d DSN) IsZero() bool { return d.raw == "" }

// Secret returns the DSN with its password, for the driver only.
func (d DSN) Secret() string { return d.raw }

// String returns the DSN with the password replaced.
func (d DSN) String() string { return d.Redact(d.raw) }

// GoString keeps %#v from printing the raw field.
func (d DSN) GoString() string { return "source.DSN(" + d.String() + ")" }

// MarshalJSON writes the redacted form.
func (d DSN) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf("%q", d.String())), nil }

// Identity names the database without credentials: driver, host, port and
// database. It goes into checkpoint fingerprints and reports.
func (d DSN) Identity() string {
	switch d.driver {
	case "postgres":
		if u, err := url.Parse(d.raw); err == nil && u.Scheme != "" {
			return "postgres://" + u.Host + u.Path
		}
		kv := parseKV(d.raw)
		return "postgres://" + kv["host"] + ":" + kv["port"] + "/" + kv["dbname"]
	case "mysql":
		if cfg, err := mysql.ParseDSN(d.raw); err == nil {
			return "mysql://" + cfg.Addr + "/" + cfg.DBName
		}
	}
	return d.driver
}

var kvPassword = regexp.MustCompile(`(?:^|\s)password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)

// postgresPasswords is the DSN's password as net/url decodes it and as
// pgx will send it, which is what a server's message may quote: pgx
// decodes URLs as libpq does (+ is a plus sign, not a space as net/url has
// it). pgx's only when the DSN has one: pgx would otherwise fill in
// PGPASSWORD or the passfile's.
func postgresPasswords(raw string, cfg *pgconn.Config) []string {
	p := dsnPostgresPassword(raw)
	switch {
	case p == "":
		return nil
	case cfg.Password != "" && cfg.Password != p:
		return []string{p, cfg.Password}
	}
	return []string{p}
}

func dsnPostgresPassword(raw string) string {
	if u, err := url.Parse(raw); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if p, ok := u.User.Password(); ok {
			return p
		}
		return u.Query().Get("password")
	}
	if m := kvPassword.FindStringSubmatch(raw); m != nil {
		return strings.Trim(m[1], "'")
	}
	return ""
}

func parseKV(raw string) map[string]string {
	out := map[string]string{}
	for _, f := range strings.Fields(raw) {
		if k, v, ok := strings.Cut(f, "="); ok {
			out[k] = strings.Trim(v, "'")
		}
	}
	return out
}

// mysqlURLToDSN turns mysql://user:pass@host:port/db?params into the
// driver's own format.
func mysqlURLToDSN(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", &DSNError{Msg: "invalid mysql:// URL"}
	}
	addr := u.Host
	if u.Port() == "" {
		addr += ":3306"
	}
	userinfo := u.User.Username()
	if p, ok := u.User.Password(); ok {
		userinfo += ":" + p
	}
	dsn := userinfo + "@tcp(" + addr + ")/" + strings.TrimPrefix(u.Path, "/")
	if u.RawQuery != "" {
		dsn += "?" + u.RawQuery
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", &DSNError{Msg: "invalid mysql:// URL"}
	}
	return cfg.FormatDSN(), nil
}
