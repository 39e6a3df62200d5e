package mysql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/dynafold/dynafold/source"
)

// MaxText returns the largest value of column in table as the server
// prints it (the watermark of an incremental run, in the source's own
// clock and the session's time zone, UTC), and ok=false when the column
// holds no value.
func (s *Source) MaxText(ctx context.Context, table source.TableRef, column string) (string, bool, error) {
	d := dialect{}
	q := "SELECT CAST(MAX(" + d.Quote(column) + ") AS CHAR) FROM " + source.QuoteRef(d, table)
	var v sql.NullString
	if err := s.db.QueryRowContext(ctx, q).Scan(&v); err != nil {
		return "", false, fmt.Errorf("reading the watermark MAX(%s) of %s: %w", column, table, s.dsn.RedactError(err))
	}
	return v.String, v.Valid, nil
}
