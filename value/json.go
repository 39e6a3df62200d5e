package value

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// wire is the JSON form of a Value used in checkpoint files: the kind by
// name and the value as exact text, so that a saved key position resumes at
// exactly the same row (no float rounding, no lost time zone).
type wire struct {
	K string  `json:"k"`
	V *string `json:"v,omitempty"`
	L []Value `json:"l,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (v Value) MarshalJSON() ([]byte, error) {
	w := wire{K: v.Kind.String()}
	var s string
	switch v.Kind {
	case Null:
		return json.Marshal(w)
	case List:
		w.L = v.List()
		if w.L == nil {
			w.L = []Value{}
		}
		return json.Marshal(w)
	case Bytes:
		s = base64.StdEncoding.EncodeToString(v.Bytes())
	case Date, Timestamp:
		s = v.Time().Format(time.RFC3339Nano)
	case Float:
		s = strconv.FormatFloat(v.Float(), 'g', -1, 64)
	default:
		s = v.Text()
	}
	w.V = &s
	return json.Marshal(w)
}

// UnmarshalJSON implements json.Unmarshaler.
func (v *Value) UnmarshalJSON(data []byte) error {
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	kind := -1
	for i, n := range kindNames {
		if n == w.K {
			kind = i
		}
	}
	if kind < 0 {
		return fmt.Errorf("unknown value kind %q", w.K)
	}
	*v = Value{Kind: Kind(kind)}
	if v.Kind == Null {
		return nil
	}
	if v.Kind == List {
		*v = ListValue(w.L)
		return nil
	}
	if w.V == nil {
		return fmt.Errorf("value of kind %s has no text", w.K)
	}
	s := *w.V
	var err error
	switch v.Kind {
	case Int:
		v.I, err = strconv.ParseInt(s, 10, 64)
	case Bool:
		var b bool
		b, err = strconv.ParseBool(s)
		if b {
			v.I = 1
		}
	case Float:
		var f float64
		f, err = strconv.ParseFloat(s, 64)
		*v = FloatValue(f)
	case Bytes:
		var b []byte
		b, err = base64.StdEncoding.DecodeString(s)
		*v = BytesValue(b)
	case Date, Timestamp:
		var t time.Time
		t, err = time.Parse(time.RFC3339Nano, s)
		*v = instant(v.Kind, t)
	default:
		v.S = s
	}
	if err != nil {
		return fmt.Errorf("decoding %s value %q: %w", w.K, s, err)
	}
	return nil
}
