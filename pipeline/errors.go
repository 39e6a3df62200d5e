package pipeline

import (
	"errors"
	"fmt"
)

// How a run that did not simply succeed ends. cmd/dynafold maps each to
// its exit code; live sync (cdc) and incremental runs end the same ways.

// ErrInterrupted is returned when Stop ended the run early; the checkpoint
// holds every acknowledged position and the run can be resumed.
var ErrInterrupted = errors.New("interrupted; checkpoint saved, run again to resume")

// ResumableError is a failure after which the saved checkpoint is valid and
// a later run resumes where this one stopped (a source that kept dropping
// the connection, for example).
type ResumableError struct{ Err error }

func (e *ResumableError) Error() string {
	return e.Err.Error() + " (checkpoint saved; run again to resume)"
}
func (e *ResumableError) Unwrap() error { return e.Err }

// RejectedError is a run that finished with rows rejected or skipped
// (on_error: reject or skip): every other row was written. It is the one
// way a finished run says so.
type RejectedError struct{ Rejected, Skipped int64 }

func (e *RejectedError) Error() string {
	return fmt.Sprintf("finished with %d rejected and %d skipped rows", e.Rejected, e.Skipped)
}

// Rejections is a *RejectedError when the run rejected or skipped rows,
// else nil.
func (s *Summary) Rejections() error {
	if s == nil || s.Total.Rejected+s.Total.Skipped == 0 {
		return nil
	}
	return &RejectedError{Rejected: s.Total.Rejected, Skipped: s.Total.Skipped}
}
