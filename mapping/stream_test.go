package mapping

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// target.stream names one of DynamoDB Streams' four view types, in either
// case, and is left out of the fingerprint: a stream enabled at cutover
// changes nothing sync writes, so its checkpoint still matches.
func TestStream(t *testing.T) {
	const m = `
version: 1
source: {driver: postgres}
target: {table: shop, key: {pk: PK, sk: SK}X}
entities:
  e: {from: t, key: {pk: "E#${id}", sk: E}}
`
	compile := func(stream string) *Plan {
		cfg, err := Parse([]byte(strings.Replace(m, "X", stream, 1)))
		require.NoError(t, err)
		p, err := Compile(cfg, nil, Options{})
		require.NoError(t, err)
		return p
	}
	require.Empty(t, compile("").Table.StreamViewType)
	for name, want := range map[string]string{
		"new_and_old_images": "NEW_AND_OLD_IMAGES",
		"NEW_IMAGE":          "NEW_IMAGE",
		"old_image":          "OLD_IMAGE",
		"keys_only":          "KEYS_ONLY",
	} {
		require.Equal(t, want, compile(", stream: "+name).Table.StreamViewType, name)
	}
	require.Equal(t, compile("").Fingerprint("src"), compile(", stream: new_and_old_images").Fingerprint("src"))
}
