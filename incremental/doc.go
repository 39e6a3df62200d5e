// Package incremental holds what an incremental run (migrate
// --incremental) keeps between runs and the pieces it adds to the
// pipeline: the watermark state file, the overlap arithmetic on the
// source's timestamps, and a sink that deletes the items of soft-deleted
// rows. The narrowing of each entity's query to its changed rows is the
// compiled plan's (mapping.Plan.Changed); the sweep for hard deletes is
// verify's stale detection.
package incremental
