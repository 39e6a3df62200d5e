// Package plan checks a mapping before anything is written: `dynafold plan`.
//
// It has three parts, each usable alone:
//
//   - Lint: static checks of a compiled mapping (key uniqueness, entities
//     whose keys can collide, ambiguous delimiters, index declarations and
//     projections, DynamoDB naming rules), pure over the Plan.
//   - Measure: one streaming pass over the source, building every item as
//     migrate would and accumulating sizes, key lengths, item collections,
//     hot partition keys, GSI key skew and duplicate keys in bounded
//     memory (exact up to stated limits, bounded sketches beyond).
//   - Estimate: write units, on-demand cost, duration and storage, pure
//     functions of the measured totals.
//
// Run puts them together into a Report, which renders as text, JSON or
// Markdown. The package reads the source through source.Snapshot and never
// touches DynamoDB; the caller passes what it learned about the target.
package plan
