// Package shadow runs sync's continuous shadow comparison (sync
// --shadow-patterns): while sync applies the source's changes, it keeps
// comparing each access pattern's SQL answer with its DynamoDB answer, at
// a set rate, in the same process.
//
// A comparison is made without false positives from sync's lag: the SQL
// answer is read in a read-only snapshot whose source position is known,
// DynamoDB is read only once sync has applied past that position, and a
// difference counts as a mismatch only when no round of sync past the
// position it had confirmed before the snapshot began writing before
// DynamoDB was read: then both answers are of one moment. A difference
// read while sync wrote later changes is read again, up to three rounds.
// Everything that prevents a comparison (sync behind for longer than a
// bound, a source that never stood still, a failing query) is counted as
// skipped, never as a mismatch, and never stops sync.
//
// The comparing itself (binding, the DynamoDB query, the diff, the text of
// a mismatch) is the patterns package's, as patterns --compare-source
// uses it.
package shadow
