package pipeline

import (
	"fmt"
	"testing"
)

// BenchmarkKeySet adds portfolio-like keys to a default-sized filter: the
// cost per item of duplicate detection on the migrate hot path.
func BenchmarkKeySet(b *testing.B) {
	s := newKeySet(64 << 20)
	keys := make([]string, 1<<20)
	for i := range keys {
		keys[i] = fmt.Sprintf("%d\x00DATABASE#db%dn%d", i/10, i, i%10)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.testAndAdd(keys[i&(len(keys)-1)] + "")
	}
}

// BenchmarkKeySetChunks adds the same keys in chunks of 64, as builders do.
func BenchmarkKeySetChunks(b *testing.B) {
	s := newKeySet(64 << 20)
	keys := make([]string, 1<<20)
	for i := range keys {
		keys[i] = fmt.Sprintf("%d\x00DATABASE#db%dn%d", i/10, i, i%10)
	}
	seen := make([]bool, 64)
	b.ResetTimer()
	for i := 0; i < b.N; i += 64 {
		j := i & (len(keys) - 1)
		s.testAndAddAll(keys[j:j+64], seen)
	}
}
