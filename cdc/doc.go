// Package cdc keeps the table in step with a source that is still being
// written: live sync. It loads the table once (the same pipeline as
// migrate), then applies the source's change log, transaction by
// transaction, by re-deriving from the source every item a change touches.
//
// The mapping already says which source rows feed which item. For a change
// to row R of table T, the engine asks the compiled plan which entity rows
// depend on R: the entity whose own table is T (by key), the entities that
// pre-join T as an ancestor (by the columns the join is on, through one
// query), and the parents that nest T's rows (by the child's parent key).
// It reads those entity rows as they are now, builds their items with the
// same code as migrate, and compares the item keys with the keys the row
// produced before, kept in a local row index: new items are put, keys no
// longer produced are deleted.
//
// Why re-derive rather than patch: an item is then always exactly what
// migrate would write from the rows as they are, whatever order changes
// arrive in and however often one is replayed. A change replayed after a
// crash, or applied onto rows already newer than it, re-reads the rows and
// writes the same items again.
//
// Order: transactions are applied in commit order, one round (a group of
// whole transactions) at a time, and a round's writes are all acknowledged
// before the next round reads. Within a round every item key is written
// once. A source position is confirmed only after every effect of every
// transaction up to it is acknowledged by DynamoDB and recorded in the row
// index.
//
// The change source is an interface (source.ChangeSource); source/postgres
// implements it with logical replication, source/mysql with the binlog
// of MySQL and MariaDB.
package cdc
