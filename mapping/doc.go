// Package mapping turns a mapping file into a Plan and source rows into
// DynamoDB items.
//
// It holds the configuration types and their validation, the key template
// language with its transforms, conversion of source values to DynamoDB
// attribute values, item building (keys, sparse index keys, attributes, TTL,
// vertical partitioning) and DynamoDB's limits on items and keys. It does no
// I/O: the source schema it validates against is handed in by the caller.
package mapping
