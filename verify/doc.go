// Package verify is the comparer behind `dynafold verify`, `dynafold diff`
// (and `migrate --dry-run`) and `migrate --prune`.
//
// It rebuilds the items a migration writes from the source, through the
// same mapping code as migrate (mapping.EntityPlan.Build over the entity's
// keyset-paged shards), and compares them with the target table:
//
//   - check: the expected items are streamed into BatchGetItem requests of
//     at most 100 keys (consistent reads) and each is classified as create
//     (missing in the target), update (present but different, with the
//     attributes added, removed or changed) or unchanged;
//   - sweep: every item collection (partition key) a source row touched is
//     queried, and an item there that carries the mapping's type attribute
//     or one of its entities' sort-key prefixes but is produced by no row is
//     stale. In prune mode stale items are deleted as they are found.
//
// Memory stays bounded whatever the size of the source or the table: items
// stream from the source to the lookups in small batches, and the keys the
// sweep needs are kept in sorted runs that spill to temporary files past a
// byte budget and are merged back in key order (see spill.go).
//
// The result is a Report with a stable JSON schema (documented in
// docs/verify.md) and text and Markdown renderings.
package verify
