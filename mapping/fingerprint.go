package mapping

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
)

// Fingerprint identifies what a run writes: the mapping's meaning (not its
// comments, layout or connection details), the bound variables, the source
// database and the table. A checkpoint records it, and resuming under a
// different fingerprint is refused, because positions saved for one mapping
// mean nothing for another.
func (p *Plan) Fingerprint(sourceIdentity string) string {
	cfg := *p.Config
	cfg.Source.DSN = ""
	cfg.Target.Endpoint = ""
	cfg.Patterns = nil
	vars := make([]string, 0, len(p.Vars))
	for k, v := range p.Vars {
		vars = append(vars, k+"="+v)
	}
	sort.Strings(vars)
	doc := struct {
		Config *Config  `json:"config"`
		Vars   []string `json:"vars"`
		Source string   `json:"source"`
	}{&cfg, vars, sourceIdentity}
	b, err := json.Marshal(doc)
	if err != nil {
		// Config holds only strings, numbers, slices and maps; this cannot fail.
		panic("fingerprint: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// MarshalJSON leaves out the line number, so that moving a key in the file
// does not change the fingerprint.
func (e Entry[T]) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		K string `json:"k"`
		V T      `json:"v"`
	}{e.Key, e.Value})
}
