package dict

import "testing"

// BenchmarkHashKey is the hash of a 15-byte key, as a lookup computes it.
func BenchmarkHashKey(b *testing.B) {
	key := "key:00000000123"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		hashKey(uint64(i), key)
	}
}
