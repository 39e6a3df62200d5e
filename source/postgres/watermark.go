package postgres

import (
	"context"
	"fmt"

	"github.com/dynafold/dynafold/source"
)

// MaxText returns the largest value of column in table as PostgreSQL
// prints it (the watermark of an incremental run, in the source's own
// clock), and ok=false when the column holds no value.
func (s *Source) MaxText(ctx context.Context, table source.TableRef, column string) (string, bool, error) {
	d := dialect{}
	sql := "SELECT max(" + d.Quote(column) + ")::text FROM " + source.QuoteRef(d, table)
	var v *string
	if err := s.pool.QueryRow(ctx, sql).Scan(&v); err != nil {
		return "", false, fmt.Errorf("reading the watermark max(%s) of %s: %w", column, table, s.dsn.RedactError(err))
	}
	if v == nil {
		return "", false, nil
	}
	return *v, true, nil
}
