// Package archtest holds the architecture's rules against the code: the
// layers of docs/architecture.md, read from the packages' real imports,
// and the CLI's shape (cmd/dynafold is a thin shell: no function over 60
// lines). It has no code; its test fails the build when a rule is broken.
package archtest
