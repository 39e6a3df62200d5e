package cdc

import (
	"encoding/binary"

	"github.com/dynafold/dynafold/value"
)

// rowKey encodes a source key: per column its kind and its text, length
// prefixed, so that distinct keys never encode alike.
func rowKey(vals []value.Value) []byte {
	return appendRowKey(make([]byte, 0, 16*len(vals)), vals)
}

// appendRowKey appends the encoding of vals (rowKey) to dst.
func appendRowKey(dst []byte, vals []value.Value) []byte {
	// Most keys' texts fit this buffer, which then stays on the stack.
	var buf [48]byte
	for _, v := range vals {
		dst = append(dst, byte(v.Kind))
		text := value.AppendText(buf[:0], v)
		dst = binary.AppendUvarint(dst, uint64(len(text)))
		dst = append(dst, text...)
	}
	return dst
}
