// Package design draws a compiled mapping as the artifacts DynamoDB people
// work with: a NoSQL Workbench data model, the table as CloudFormation, CDK
// and Terraform define it, and one self-contained HTML page.
//
// Every artifact is drawn from one Model: the table exactly as table create
// makes it (sink.CreateInput), one facet per entity, the access patterns
// and, when the source is read, sample items built by the same builder
// migrate uses and plan's measurements. Nothing here does I/O beyond what
// the caller hands in: ReadSamples reads through a source.Snapshot.
package design
