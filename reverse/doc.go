// Package reverse decides whether a compiled mapping can run backwards:
// whether every row it reads can be rebuilt from the items it writes.
//
// For every entity and every column of the table it reads (and of each
// nested child table) Analyze finds the attribute or key part that owns
// the column, checks that the way forward lost nothing (a type conversion,
// a template transform, a key whose parts cannot be cut apart again), and
// lists the copies that are derived and ignored on the way back:
// pre-joined ancestor columns, lossy key parts of a column kept whole
// elsewhere, the type and TTL attributes, constants. What cannot reverse
// is reported with the reason and the fix.
//
// `dynafold plan --reversible` prints the Report and turns what cannot
// reverse into mapping errors; fail-back runs Analyze before it starts.
// The package reads the plan and the source schema only; it does no I/O.
package reverse
