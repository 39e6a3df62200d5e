package main

import (
	"errors"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
)

// Exit codes: the contract that scripts and CI rely on.
const (
	exitOK          = 0 // success, nothing pending
	exitFailure     = 1 // the run failed
	exitUsage       = 2 // invalid usage or mapping
	exitDifferences = 3 // verify or diff found differences
	exitInterrupted = 4 // interrupted or failed resumably; checkpoint saved
	exitRejected    = 5 // finished, but some rows were rejected or skipped
)

// exitError carries an exit code with its error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks an error as invalid usage (exit 2).
func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

// exitCode maps an error to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var merrs mapping.Errors
	var merr *mapping.Error
	if errors.As(err, &merrs) || errors.As(err, &merr) {
		return exitUsage
	}
	var resumable *pipeline.ResumableError
	if errors.Is(err, pipeline.ErrInterrupted) || errors.As(err, &resumable) {
		return exitInterrupted
	}
	var rejected *pipeline.RejectedError
	if errors.As(err, &rejected) {
		return exitRejected
	}
	var insecure *sink.InsecureEndpointError
	var dsn *source.DSNError
	var stream *sink.StreamError
	if errors.Is(err, checkpoint.ErrMismatch) || errors.As(err, &insecure) || errors.As(err, &dsn) || errors.As(err, &stream) {
		return exitUsage
	}
	return exitFailure
}
