package statestore_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/statestore"
	"github.com/dynafold/dynafold/statestore/statestoretest"
)

func TestFileConformance(t *testing.T) {
	statestoretest.Run(t, fileSubject(nil))
}

// fileSubject opens the files of a fresh directory per case, wrapped by
// wrap when it is given.
func fileSubject(wrap func(statestore.Store) statestore.Store) func(t *testing.T) statestoretest.Subject {
	return func(t *testing.T) statestoretest.Subject {
		path := filepath.Join(t.TempDir(), "t.sync.json")
		var calls int64
		var open *statestore.File
		return statestoretest.Subject{
			Open: func(t *testing.T) statestore.Store {
				if open != nil {
					calls += open.Calls()
				}
				f, err := statestore.OpenFile(path)
				require.NoError(t, err)
				open = f
				if wrap != nil {
					return wrap(f)
				}
				return f
			},
			Requests: func() int64 { return calls + open.Calls() },
		}
	}
}
