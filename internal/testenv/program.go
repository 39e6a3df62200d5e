package testenv

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

// Program lets a program outside the tests (dynafold-bench) use the
// servers of its own this package starts for tests (StartPostgres,
// StartMariaDB): it is the testing.TB they take. Fatal and Fatalf panic
// with a *Failure that Do turns back into an error; cleanups run at
// Close, last first. Only the methods those helpers call are given; the
// embedded TB is nil, so calling another one panics.
type Program struct {
	testing.TB
	name     string
	mu       sync.Mutex
	cleanups []func()
}

// Failure is a Fatal of a Program.
type Failure struct{ Msg string }

func (f *Failure) Error() string { return f.Msg }

// NewProgram returns a Program named name (the name databases get).
func NewProgram(name string) *Program { return &Program{name: name} }

// Do runs fn and returns the Failure it raised, if any.
func (p *Program) Do(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			var f *Failure
			if e, ok := r.(error); ok && errors.As(e, &f) {
				err = f
				return
			}
			panic(r)
		}
	}()
	fn()
	return nil
}

// Close runs the cleanups, last registered first.
func (p *Program) Close() {
	p.mu.Lock()
	fns := p.cleanups
	p.cleanups = nil
	p.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

func (p *Program) Helper()      {}
func (p *Program) Name() string { return p.name }

func (p *Program) Cleanup(fn func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cleanups = append(p.cleanups, fn)
}

func (p *Program) Log(args ...any) { fmt.Fprintln(os.Stderr, args...) }

func (p *Program) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func (p *Program) Fatal(args ...any) { panic(&Failure{Msg: fmt.Sprint(args...)}) }

func (p *Program) Fatalf(format string, args ...any) {
	panic(&Failure{Msg: fmt.Sprintf(format, args...)})
}

func (p *Program) Errorf(format string, args ...any) { p.Fatalf(format, args...) }

func (p *Program) TempDir() string {
	dir, err := os.MkdirTemp("", "dynafold-program-")
	if err != nil {
		p.Fatal(err)
	}
	p.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
