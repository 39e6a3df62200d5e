package plan

import (
	"errors"
	"fmt"
	"sort"

	"github.com/dynafold/dynafold/mapping"
)

// Severity ranks a finding.
type Severity string

// The severities, most serious first.
const (
	// Error: the mapping is wrong or the data cannot be written as mapped.
	Error Severity = "error"
	// Warning: likely a mistake or a cost; the migration can still run.
	Warning Severity = "warning"
	// Note: worth knowing; nothing to fix.
	Note Severity = "note"
)

func (s Severity) rank() int {
	switch s {
	case Error:
		return 0
	case Warning:
		return 1
	}
	return 2
}

// Origin says what a finding is about: the mapping (static checks, exit 2
// on error) or the data (measured, exit 3 on error).
type Origin string

// The origins.
const (
	Mapping Origin = "mapping"
	Data    Origin = "data"
)

// Finding is one problem or remark.
type Finding struct {
	Severity Severity `json:"severity"`
	Origin   Origin   `json:"origin"`
	// Check names the rule, e.g. "key.collision", "limit.item_size".
	Check string `json:"check"`
	// Path is the mapping key path the finding is about.
	Path    string `json:"path,omitempty"`
	Entity  string `json:"entity,omitempty"`
	Message string `json:"message"`
}

func (f Finding) String() string {
	s := string(f.Severity) + " " + f.Check
	if f.Path != "" {
		s += " " + f.Path
	}
	return s + ": " + f.Message
}

// findings collects findings.
type findings []Finding

func (fs *findings) add(sev Severity, origin Origin, check, path, entity, format string, args ...any) {
	*fs = append(*fs, Finding{Severity: sev, Origin: origin, Check: check, Path: path, Entity: entity, Message: fmt.Sprintf(format, args...)})
}

// sortFindings orders by severity, keeping each severity's order of
// discovery (mapping order for static checks).
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Severity.rank() < fs[j].Severity.rank() })
}

// MappingErrors turns the errors Compile reports into findings, so that a
// mapping that does not compile is reported like every other problem.
func MappingErrors(err error) ([]Finding, bool) {
	var errs mapping.Errors
	var one *mapping.Error
	switch {
	case errors.As(err, &errs):
	case errors.As(err, &one):
		errs = mapping.Errors{one}
	default:
		return nil, false
	}
	out := make([]Finding, len(errs))
	for i, e := range errs {
		out[i] = Finding{Severity: Error, Origin: Mapping, Check: "mapping", Path: e.Path, Message: e.Msg}
	}
	return out, true
}
