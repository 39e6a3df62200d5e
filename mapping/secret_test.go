package mapping

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// No mapping error quotes the value of source.dsn, whatever is wrong with
// it (a tag, a type, an alias to it), nor a value elsewhere that looks like
// a DSN or a credential: the key path and the line name it instead. yaml's
// own message for `dsn: !!int postgres://…` quoted the whole DSN.
func TestErrorsDoNotQuoteSecrets(t *testing.T) {
	const pw = "p@ssW0rdXq"
	const head = "version: 1\nsource:\n  driver: postgres\n"
	for _, tc := range []struct {
		name, doc, path string
		line            int
	}{
		{"dsn tagged int", head + "  dsn: !!int postgres://app:" + pw + "@127.0.0.1/db\n", "source.dsn", 4},
		{"dsn tagged float", head + "  dsn: !!float host=db user=app password=" + pw + "\n", "source.dsn", 4},
		{"dsn tagged bool", head + "  dsn: !!bool " + pw + "\n", "source.dsn", 4},
		{"dsn tagged timestamp", head + "  dsn: !!timestamp app:" + pw + "@tcp(127.0.0.1:3306)/db\n", "source.dsn", 4},
		{"dsn tagged binary", head + "  dsn: !!binary mysql://app:" + pw + "@127.0.0.1/db\n", "source.dsn", 4},
		{"dsn a list", head + "  dsn: [postgres://app:" + pw + "@127.0.0.1/db]\n", "source.dsn", 4},
		{"dsn a mapping", head + "  dsn: {url: postgres://app:" + pw + "@127.0.0.1/db}\n", "source.dsn", 4},
		{"dsn a short plain word", head + "  dsn: !!int " + pw[:9] + "\n", "source.dsn", 4},
		{"dsn in flow style", "version: 1\nsource: {driver: postgres, dsn: !!int postgres://app:" + pw + "@127.0.0.1/db}\n", "source.dsn", 2},
		{"dsn through an alias", "version: 1\nx: &d !!int postgres://app:" + pw + "@h/db\nsource:\n  dsn: *d\n", "", 0},
		{"a DSN in version", "version: !!int postgres://app:" + pw + "@127.0.0.1/db\n", "version", 1},
		{"a DSN of the wrong type", "version: postgres://app:" + pw + "@127.0.0.1/db\n", "version", 1},
		{"a MySQL DSN of the wrong type", "version: app:" + pw + "@tcp(127.0.0.1:3306)/db\n", "version", 1},
		{"a DSN in driver", "version: 1\nsource:\n  driver: !!int postgres://app:" + pw + "@127.0.0.1/db\n", "source.driver", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			require.Error(t, err)
			var errs Errors
			require.ErrorAs(t, err, &errs)
			msg := err.Error()
			for i := 0; i+4 <= len(pw); i++ {
				require.NotContains(t, msg, pw[i:i+4], "the error quotes part of the password")
			}
			if tc.path != "" {
				require.Contains(t, msg, tc.path+": ", "the error names the key")
				require.Equal(t, tc.line, errs[0].Line)
				require.Contains(t, msg, "line ", "the error names the line")
			}
		})
	}
}

// A DSN put in source.driver by mistake is not quoted by the check of
// driver names either.
func TestUnknownDriverDoesNotQuoteADSN(t *testing.T) {
	cfg, err := Parse([]byte("version: 1\nsource: {driver: 'postgres://app:p@ssW0rdXq@h/db'}\ntarget: {table: t, key: {pk: PK}}\nentities: {a: {from: a, key: {pk: x}}}\n"))
	require.NoError(t, err)
	_, err = Compile(cfg, nil, Options{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "source.driver: unknown driver")
	require.False(t, strings.Contains(err.Error(), "ssW0"), err.Error())
}
