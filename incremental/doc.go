// Package incremental is the incremental run (migrate --incremental): Run
// reads the watermarks, then in one snapshot deletes the items of
// soft-deleted rows, re-derives the items of changed rows, rewrites the
// parents a nested child left (the nest check) and deletes the items no
// row produces (the key sweep), and only then moves the watermarks. It
// holds what a run keeps between runs and the pieces it adds to the
// pipeline: the watermark state file, the overlap arithmetic on the
// source's timestamps, a sink that deletes the items of soft-deleted rows,
// a sink that writes only the items that differ from the table (the nest
// check), the file of collection digests that lets the key sweep query
// only the collections whose keys changed, and a sink wrapper that
// remembers the collections a run wrote. The narrowing of each entity's
// query to its changed rows is the compiled plan's (mapping.Plan.Changed);
// the sweep for hard deletes is verify's stale detection, key-only
// (verify.Options.KeyOnly, verify.Digests). RunPreview (diff
// --incremental) shows what Run would change, within the same bounds
// (Begin), and writes nothing.
package incremental
