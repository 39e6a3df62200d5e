package plan

import (
	"errors"
	"fmt"
	"slices"
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
	// Acknowledged: the mapping's lint.ignore lists the check; the finding
	// is reported as a note and stops nothing. Severity keeps what it was.
	Acknowledged bool     `json:"acknowledged,omitempty"`
	Was          Severity `json:"acknowledged_severity,omitempty"`
}

// Acknowledge turns the findings whose check lint.ignore lists into
// acknowledged notes.
func Acknowledge(fs []Finding, lint *mapping.LintConfig) {
	if lint == nil {
		return
	}
	for i := range fs {
		if slices.Contains(lint.Ignore, fs[i].Check) && !fs[i].Acknowledged {
			fs[i].Acknowledged, fs[i].Was, fs[i].Severity = true, fs[i].Severity, Note
			fs[i].Message += " (acknowledged: lint.ignore lists " + fs[i].Check + ")"
		}
	}
}

// unmatchedIgnores notes the checks lint.ignore lists that no finding has:
// a typo, or a problem since fixed.
func unmatchedIgnores(fs []Finding, lint *mapping.LintConfig) []Finding {
	if lint == nil {
		return nil
	}
	var out []Finding
	for _, c := range lint.Ignore {
		if !slices.ContainsFunc(fs, func(f Finding) bool { return f.Check == c }) {
			out = append(out, Finding{Severity: Note, Origin: Mapping, Check: "lint.ignore", Path: "lint.ignore",
				Message: fmt.Sprintf("lint.ignore lists %s, which no check reported (a typo, or a problem since fixed?)", c)})
		}
	}
	return out
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
