// Package redact keeps credentials out of what dynafold prints and
// writes. A Redactor holds the secrets a run knows (the AWS credentials
// of the environment and of the credential chain) and replaces them in
// any text, in whatever escaping the text carries them, along with
// anything shaped like an AWS credential that it was not told of: an
// endpoint's error message may quote a key id, a secret or a session
// token back. Encoded is the escaping-blind replacement, which
// source.DSN uses for a password too. cmd/dynafold passes its stdout, stderr
// and --report through one Redactor, so that no error or report string
// needs remembering at the place it is made.
package redact
