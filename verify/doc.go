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
//   - sweep: an item that carries the mapping's type attribute or one of
//     its entities' sort-key prefixes (owner.go) but is produced by no row
//     is stale; items the mapping does not recognise are counted and left
//     alone. The table sweep (tablesweep.go, the default, and the key sweep
//     of incremental runs and of a sync's resnapshot) scans every key of
//     the table and merges it with the keys the rows make; the collections
//     sweep (sweep.go) queries only the collections the rows produce; the
//     digest sweep (digestsweep.go) only those whose keys changed since an
//     incremental run's last sweep. Stale items are tallied per entity and
//     per collection (groups.go). In prune mode they are deleted as they
//     are found.
//
// Memory stays bounded whatever the size of the source or the table: items
// stream from the source to the lookups in small batches, and the keys the
// sweeps need are kept in sorted runs that spill to temporary files past a
// byte budget and are merged back in key order (see spill.go).
//
// The result is a Report with a stable JSON schema (documented in
// docs/verify.md) and text and Markdown renderings.
package verify
