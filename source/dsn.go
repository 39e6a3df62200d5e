package source

import (
	"errors"
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
	driver   string
	raw      string
	password string
}

const redacted = "xxxxx"

// ParseDSN recognises PostgreSQL URLs and key=value strings, MySQL
// driver DSNs (user:pass@tcp(host:port)/db) and mysql:// URLs. A DSN whose
// form names its driver (postgres://, mysql://, @tcp(…)) decides the driver,
// so one mapping file can be run against either database with --source-dsn;
// otherwise driver ("postgres" or "mysql") is used.
func ParseDSN(driver, raw string) (DSN, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return DSN{}, errors.New("empty DSN")
	}
	if inferred := inferDriver(raw); inferred != "" {
		driver = inferred
	}
	if driver == "" {
		return DSN{}, errors.New("cannot tell the driver from the DSN; set source.driver")
	}
	d := DSN{driver: driver, raw: raw}
	switch driver {
	case "postgres":
		cfg, err := pgconn.ParseConfig(raw)
		if err != nil {
			// pgx's message may quote the DSN; do not pass it on.
			return DSN{}, errors.New("invalid PostgreSQL DSN (expected postgres://user:password@host:port/database?sslmode=… or host=… user=… dbname=…)")
		}
		d.password = postgresPassword(raw, cfg)
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
			return DSN{}, errors.New("invalid MySQL DSN (expected user:password@tcp(host:port)/database or mysql://user:password@host:port/database)")
		}
		d.password = cfg.Passwd
	default:
		return DSN{}, fmt.Errorf("unknown driver %q (postgres or mysql)", driver)
	}
	return d, nil
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

// userinfo matches "user:secret@" in URLs and MySQL DSNs, a second line of
// defence for text the password extraction did not cover.
var userinfo = regexp.MustCompile(`((?:^|//|\s)[^:/@\s'"]*:)[^@\s/]+@`)

// passwordParam matches the value of a password= parameter: in a URL's
// query or a key=value DSN. It catches what matching the password misses:
// an escaping other than Go's (every byte as %XX, %20 for a space) and the
// DSNs whose password could not be extracted because they do not parse.
var passwordParam = regexp.MustCompile(`(?i)((?:^|[?&\s])password\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]+)`)

// Redact removes the password (raw and URL-escaped) from any text, such as
// a driver's error message.
func (d DSN) Redact(s string) string {
	s = userinfo.ReplaceAllString(s, "${1}"+redacted+"@")
	s = passwordParam.ReplaceAllString(s, "${1}"+redacted)
	if d.password == "" {
		return s
	}
	s = strings.ReplaceAll(s, d.password, redacted)
	if esc := url.QueryEscape(d.password); esc != d.password {
		s = strings.ReplaceAll(s, esc, redacted)
	}
	if esc := url.PathEscape(d.password); esc != d.password {
		s = strings.ReplaceAll(s, esc, redacted)
	}
	return s
}

// RedactError wraps err so that its message never contains the password.
// errors.Is and errors.As still see the original error.
func (d DSN) RedactError(err error) error {
	// Even without a known password: the patterns in Redact still apply
	// to a DSN that did not parse far enough to yield one.
	if err == nil {
		return err
	}
	return &redactedError{msg: d.Redact(err.Error()), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

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

func postgresPassword(raw string, cfg *pgconn.Config) string {
	p := dsnPostgresPassword(raw)
	// Prefer the password as pgx will send it, which is what a server's
	// message may quote: pgx decodes URLs as libpq does (+ is a plus sign,
	// not a space as net/url has it). Only when the DSN has one: pgx would
	// otherwise fill in PGPASSWORD or the passfile's.
	if p != "" && cfg.Password != "" {
		return cfg.Password
	}
	return p
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
		return "", errors.New("invalid mysql:// URL")
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
		return "", errors.New("invalid mysql:// URL")
	}
	return cfg.FormatDSN(), nil
}
