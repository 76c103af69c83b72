package xxh3cmp

import (
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/shmzone/shmzone/internal/keyhash"
)

func TestSame(t *testing.T) {
	for _, shape := range keyhash.Shapes {
		for _, key := range keyhash.Keys(shape) {
			for _, seed := range []uint64{0, 1, 0x9E3779B97F4A7C15} {
				if got, want := keyhash.Sum(seed, key), xxh3.HashStringSeed(key, seed); got != want {
					t.Fatalf("keyhash.Sum(%#x, %q) = %#x, want xxh3's %#x", seed, key, got, want)
				}
			}
		}
	}
}

var sink uint64

func BenchmarkHash(b *testing.B) {
	const seed = 0x1234567
	for _, shape := range keyhash.Shapes {
		ks := keyhash.Keys(shape)
		b.Run("keys="+shape+"/impl=keyhash", func(b *testing.B) {
			var s uint64
			for i := 0; i < b.N; i++ {
				s += keyhash.Sum(seed, ks[i&4095])
			}
			sink = s
		})
		b.Run("keys="+shape+"/impl=zeebo", func(b *testing.B) {
			var s uint64
			for i := 0; i < b.N; i++ {
				s += xxh3.HashStringSeed(ks[i&4095], seed)
			}
			sink = s
		})
	}
}
