package cdc

import (
	"encoding/binary"

	"github.com/dynafold/dynafold/value"
)

// rowKey encodes a source key: per column its kind and its text, length
// prefixed, so that distinct keys never encode alike.
func rowKey(vals []value.Value) []byte {
	var out []byte
	for _, v := range vals {
		out = append(out, byte(v.Kind))
		text := value.AppendText(nil, v)
		out = binary.AppendUvarint(out, uint64(len(text)))
		out = append(out, text...)
	}
	return out
}
