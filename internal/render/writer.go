package render

import (
	"fmt"
	"io"
)

// Writer keeps the first write error of the writer it wraps, so that a
// renderer can print line after line unchecked and return Err once.
// After an error it writes nothing more.
type Writer struct {
	w   io.Writer
	err error
}

// NewWriter wraps w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write implements io.Writer.
func (e *Writer) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// Printf writes formatted text.
func (e *Writer) Printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

// Err is the first write error, nil when every write succeeded.
func (e *Writer) Err() error { return e.err }
