package pipeline

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynafold/dynafold/internal/durable"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/value"
)

// policy applies on_error to rows that cannot become items: fail stops the
// run, skip counts the row, reject also writes it to the reject file. Once
// more rows than the limit were skipped or rejected, the run stops.
type policy struct {
	path   string
	runID  string
	limit  int64
	capped bool
	count  atomic.Int64

	mu   sync.Mutex
	file *os.File
	enc  *json.Encoder
}

// RejectRecord is one line of the reject file. The file is appended to,
// so RunID tells one run's rejects from another's.
type RejectRecord struct {
	Time      time.Time                  `json:"time"`
	RunID     string                     `json:"run_id,omitempty"`
	Entity    string                     `json:"entity"`
	SourceKey map[string]json.RawMessage `json:"source_key"`
	Attribute string                     `json:"attribute,omitempty"`
	Reason    string                     `json:"reason"`
	Row       map[string]json.RawMessage `json:"row"`
}

func newPolicy(path, runID string, limit int64, capped bool) (*policy, error) {
	return &policy{path: path, runID: runID, limit: limit, capped: capped}, nil
}

// wrote reports whether any row went to the reject file.
func (p *policy) wrote() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.file != nil
}

// handle returns an error when the run must stop.
func (p *policy) handle(er *entityRun, rerr *mapping.RowError) error {
	switch er.plan.OnError {
	case mapping.PolicySkip:
		er.stats.skipped.Add(1)
	case mapping.PolicyReject:
		er.stats.rejected.Add(1)
		if err := p.write(rerr); err != nil {
			return err
		}
	default:
		return rerr
	}
	if n := p.count.Add(1); p.capped && n > p.limit {
		return fmt.Errorf("stopping: %d rows were skipped or rejected, more than --max-rejects %d; last: %w", n, p.limit, rerr)
	}
	return nil
}

func (p *policy) write(rerr *mapping.RowError) error {
	if p.path == "" {
		return nil
	}
	rec := RejectRecord{
		Time:      time.Now().UTC(),
		RunID:     p.runID,
		Entity:    rerr.Entity,
		SourceKey: map[string]json.RawMessage{},
		Attribute: rerr.Attribute,
		Reason:    rerr.Reason,
		Row:       map[string]json.RawMessage{},
	}
	for _, kp := range rerr.SourceKey {
		rec.SourceKey[kp.Column] = plainJSON(kp.Value)
	}
	for k, v := range rerr.Row {
		rec.Row[k] = plainJSON(v)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.file == nil {
		// Owner-only: the file holds whole source rows.
		f, err := os.OpenFile(p.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, durable.FileMode)
		if err != nil {
			return fmt.Errorf("opening reject file: %w", err)
		}
		p.file, p.enc = f, json.NewEncoder(f)
	}
	if err := p.enc.Encode(&rec); err != nil {
		return fmt.Errorf("writing reject file: %w", err)
	}
	return nil
}

func (p *policy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.file != nil {
		p.file.Close()
	}
}

// plainJSON renders a source value as ordinary JSON for people and tools
// reading the reject file: numbers stay exact (integers as numbers,
// decimals as strings), bytes are base64, JSON columns are embedded.
func plainJSON(v value.Value) json.RawMessage {
	var out any
	switch v.Kind {
	case value.Null:
		out = nil
	case value.Int:
		out = v.I
	case value.Float:
		out = v.Text()
	case value.Bool:
		out = v.I != 0
	case value.Bytes:
		out = base64.StdEncoding.EncodeToString(v.Bytes())
	case value.JSON:
		if json.Valid([]byte(v.S)) {
			return json.RawMessage(v.S)
		}
		out = v.S
	case value.List:
		parts := make([]json.RawMessage, len(v.List()))
		for i, e := range v.List() {
			parts[i] = plainJSON(e)
		}
		out = parts
	default:
		out = v.Text()
	}
	b, err := json.Marshal(out)
	if err != nil {
		// Invalid UTF-8 cannot be marshalled as-is; keep its bytes visible.
		b, _ = json.Marshal(fmt.Sprintf("%q", v.Text()))
	}
	return b
}

// RejectFile appends rows rejected under on_error: reject to a reject file,
// for commands that apply the policy themselves (live sync).
type RejectFile struct{ p *policy }

// NewRejectFile appends to path (created on the first row).
func NewRejectFile(path, runID string) *RejectFile {
	p, _ := newPolicy(path, runID, 0, false)
	return &RejectFile{p: p}
}

// Write appends one rejected row.
func (f *RejectFile) Write(rerr *mapping.RowError) error { return f.p.write(rerr) }

// Close closes the file.
func (f *RejectFile) Close() { f.p.close() }
