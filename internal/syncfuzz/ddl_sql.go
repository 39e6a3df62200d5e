package syncfuzz

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// colDef is a column's definition as the server prints it: enough to
// make the column again, or to change its type and keep the rest.
type colDef struct {
	typ     string // format_type on PostgreSQL, COLUMN_TYPE on MySQL
	notNull bool
	// MySQL's MODIFY restates the whole column: its collation, default
	// (as COLUMN_DEFAULT prints it, "" for none) and ON UPDATE clause.
	collate string
	def     string
	onUpd   string
}

func (d pgDialect) columnDef(ctx context.Context, db *sql.DB, table, col string) (colDef, error) {
	var c colDef
	err := db.QueryRowContext(ctx, `SELECT format_type(atttypid, atttypmod), attnotnull FROM pg_attribute
WHERE attrelid = $1::regclass AND attname = $2 AND NOT attisdropped`, d.quote(table), col).Scan(&c.typ, &c.notNull)
	if err != nil {
		return c, fmt.Errorf("reading the definition of %s.%s: %w", table, col, err)
	}
	return c, nil
}

func (d pgDialect) columnClause(col string, c colDef, dflt string) string {
	s := d.quote(col) + " " + c.typ
	if c.notNull {
		s += " NOT NULL"
	}
	return s + " DEFAULT " + dflt
}

func (d pgDialect) retype(table, col string, _ colDef, typ, using string) string {
	s := fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s", d.quote(table), d.quote(col), typ)
	if using != "" {
		s += " USING " + using
	}
	return s
}

func (pgDialect) varchar(n int) string { return fmt.Sprintf("character varying(%d)", n) }

func (myDialect) columnDef(ctx context.Context, db *sql.DB, table, col string) (colDef, error) {
	var c colDef
	var nullable, extra string
	var collate, def sql.NullString
	err := db.QueryRowContext(ctx, `SELECT COLUMN_TYPE, IS_NULLABLE, COLLATION_NAME, COLUMN_DEFAULT, EXTRA
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?`, table, col).
		Scan(&c.typ, &nullable, &collate, &def, &extra)
	if err != nil {
		return c, fmt.Errorf("reading the definition of %s.%s: %w", table, col, err)
	}
	c.notNull, c.collate, c.def = nullable == "NO", collate.String, unquoteMySQL(myDialect{}, def.String)
	if strings.HasPrefix(strings.ToLower(extra), "on update") {
		c.onUpd = extra
	}
	return c, nil
}

// textual reports whether a MySQL type takes a collation.
func textual(typ string) bool {
	t := strings.ToLower(typ)
	return strings.Contains(t, "char") || strings.Contains(t, "text") || strings.HasPrefix(t, "enum") || strings.HasPrefix(t, "set")
}

// columnRest is what follows a MySQL column's type: collation,
// nullability, default.
func (c colDef) columnRest(typ, dflt string) string {
	var s string
	if c.collate != "" && textual(typ) {
		s += " COLLATE " + c.collate
	}
	if c.notNull {
		s += " NOT NULL"
	} else {
		s += " NULL"
	}
	if dflt != "" {
		s += " DEFAULT " + dflt
	}
	if c.onUpd != "" {
		s += " " + c.onUpd
	}
	return s
}

func (d myDialect) columnClause(col string, c colDef, dflt string) string {
	c.onUpd = ""
	return d.quote(col) + " " + c.typ + c.columnRest(c.typ, dflt)
}

func (d myDialect) retype(table, col string, c colDef, typ, _ string) string {
	return fmt.Sprintf("ALTER TABLE %s MODIFY COLUMN %s %s%s", d.quote(table), d.quote(col), typ, c.columnRest(typ, c.def))
}

func (myDialect) varchar(n int) string { return fmt.Sprintf("varchar(%d)", n) }

func (pgDialect) sessionsQuery() string {
	return `SELECT pid, coalesce(state, ''), coalesce(wait_event_type || ':' || wait_event, ''), coalesce(backend_xid::text, ''),
	left(query, 200) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`
}

func (myDialect) sessionsQuery() string {
	return `SELECT ID, COMMAND, TIME, coalesce(STATE, ''), coalesce(LEFT(INFO, 200), '') FROM information_schema.PROCESSLIST
WHERE DB = DATABASE() AND ID <> CONNECTION_ID()`
}

// sessionsNow is the server's sessions on the fuzzed database, one a
// line, or why they could not be read.
func (f *fuzzer) sessionsNow(ctx context.Context) string {
	rows, err := f.db.QueryContext(ctx, f.d.sessionsQuery())
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var v [5]string
		if err := rows.Scan(&v[0], &v[1], &v[2], &v[3], &v[4]); err != nil {
			return err.Error()
		}
		b.WriteString(strings.Join(v[:], " | ") + "\n")
	}
	return b.String()
}

// unquoteMySQL reads a string literal as information_schema prints a
// column's default, its quotes doubled and its backslashes escaped, and
// writes it as the fuzzer's sessions read literals (str: backslashes
// are plain under NO_BACKSLASH_ESCAPES). Any other default (a number,
// NULL, an expression) is returned as it is.
func unquoteMySQL(d dialect, lit string) string {
	if len(lit) < 2 || lit[0] != '\'' || lit[len(lit)-1] != '\'' {
		return lit
	}
	in := lit[1 : len(lit)-1]
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		switch c := in[i]; {
		case c == '\\' && i+1 < len(in):
			i++
			switch in[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case 'Z':
				b.WriteByte(26)
			default:
				b.WriteByte(in[i])
			}
		case c == '\'' && i+1 < len(in) && in[i+1] == '\'':
			i++
			b.WriteByte('\'')
		default:
			b.WriteByte(c)
		}
	}
	return d.str(b.String())
}
