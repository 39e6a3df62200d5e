package source

import (
	"context"
	"errors"
)

// ErrDefinitionGone wraps a read of the current state that failed
// because a column or table it names is not there any more: DDL ran on
// the source before the log delivered it. Sync then judges the tables'
// shapes at once instead of reporting the SQL error.
var ErrDefinitionGone = errors.New("a column or table the read names is gone from the source")

// Schema changes during live sync. A change source reports that a mapped
// table's definition may have changed (SchemaChange) and, as a Shaper,
// reads what the tables look like now (TableShape); package cdc compares
// that with what it recorded and decides, in one place for both engines,
// whether sync goes on, re-derives the table's entities, or stops.

// SchemaChange says that the definition of a streamed table may have
// changed at this point of the log. It carries what the log says about
// the change: the statement's clauses where the log holds the statement
// (MySQL's query events), nothing more where it holds only the table's new
// columns (PostgreSQL's Relation message), which sync then compares with
// the catalog.
type SchemaChange struct {
	Table TableRef
	// DDL is the parsed statement, where the log carries one; nil
	// otherwise.
	DDL *DDL
}

// DDL is what one statement does to one table, as parsed from the log.
type DDL struct {
	// Statement is the statement's text, cut to a few hundred bytes, for
	// messages.
	Statement string
	// Kind is the statement's verb on the table.
	Kind DDLKind
	// Unparsed is set when the statement names the table but could not be
	// parsed: sync then re-derives the table's entities, or stops where the
	// table is gone.
	Unparsed bool
	// Added and Dropped are the columns the statement adds and drops, by
	// name; one name in both is a column dropped and added again.
	Added, Dropped []string
	// Modified are the columns whose definition MODIFY or CHANGE rewrites.
	Modified []ColumnModify
	// Renamed maps a column's old name to its new one (RENAME COLUMN, or
	// CHANGE with another name).
	Renamed map[string]string
	// Defaults are the columns whose default alone changed (ALTER COLUMN
	// SET/DROP DEFAULT).
	Defaults []string
	// NewName is the table's new name (RENAME TABLE, ALTER ... RENAME TO).
	NewName *TableRef
	// PrimaryKey is set when the statement drops or adds the primary key.
	PrimaryKey bool
	// Rebuild is set when the statement rebuilds the table without changing
	// its columns' values (OPTIMIZE, ALTER ... FORCE, ENGINE=).
	Rebuild bool
	// Convert is set when the statement converts the table's text columns
	// to another character set (CONVERT TO CHARACTER SET), which can
	// change their values.
	Convert bool
	// Partitions is set when the statement drops, truncates, exchanges or
	// reorganizes partitions: rows can vanish or appear without row
	// events.
	Partitions bool
}

// ColumnModify is one column a MODIFY or CHANGE clause redefines.
type ColumnModify struct {
	// Name is the column's name before the statement; NewName its name
	// after (equal for MODIFY).
	Name, NewName string
	// Type is the new type as the server prints it ("varchar(60)",
	// "int(10) unsigned"), for messages: sync compares the types Shapes
	// reads.
	Type string
	// NotNull is set when the new definition says NOT NULL.
	NotNull bool
}

// DDLKind is a statement's verb on a table.
type DDLKind string

// The statements a change source reports.
const (
	DDLAlter    DDLKind = "alter"
	DDLDrop     DDLKind = "drop"
	DDLRename   DDLKind = "rename"
	DDLTruncate DDLKind = "truncate"
	DDLOptimize DDLKind = "optimize"
	// DDLReplace is MariaDB's CREATE OR REPLACE TABLE: the table is dropped
	// and made again.
	DDLReplace DDLKind = "replace"
	DDLOther   DDLKind = "other"
)

// TableShape is a table's definition as far as its values depend on it,
// recorded in the sync state and compared with the catalog when the log
// says the table may have changed.
type TableShape struct {
	// ID is the table's identity where the engine has one (PostgreSQL's
	// oid): another ID under the same name is a table dropped and created
	// again.
	ID string `json:"id,omitempty"`
	// Columns are the table's columns by name.
	Columns map[string]ColumnShape `json:"columns"`
	// Key is the primary key's columns, in order.
	Key []string `json:"key,omitempty"`
	// Storage names the table's data files where the engine rewrites them
	// on a table rewrite (PostgreSQL's relfilenode): another value means
	// every row was written again without row events.
	Storage string `json:"storage,omitempty"`
	// Partitions are the table's partitions (PostgreSQL) by name, with
	// their storage: one attached or detached changes which rows the table
	// has, without row events.
	Partitions map[string]string `json:"partitions,omitempty"`
}

// ColumnShape is one column's definition.
type ColumnShape struct {
	// Num is the column's number in the table (PostgreSQL's attnum): a
	// column dropped and added again under its name has another. Zero
	// where the engine has no stable number (MySQL's ordinal position
	// says where the column is, not which column it is).
	Num int `json:"num,omitempty"`
	// Type is the column's full type as the server prints it
	// ("character varying(40)", "int(11)").
	Type    string `json:"type"`
	NotNull bool   `json:"not_null,omitempty"`
}

// Shaper is a change source that reads the tables' definitions as they
// are now. A table that does not exist is absent from the result.
type Shaper interface {
	Shapes(ctx context.Context, refs []TableRef) (map[TableRef]*TableShape, error)
}

// TableFinder is a Shaper that can find a table by its ID (TableShape.ID):
// a mapped table that is gone under its name may be there under another.
type TableFinder interface {
	TableByID(ctx context.Context, id string) (TableRef, bool, error)
}
