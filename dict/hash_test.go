package dict

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/shmzone/shmzone/internal/testutil"
)

// hashKey must be XXH64 with a seed exactly: the zone's seed defends against
// chosen-key flooding only if the function is the real one.
func TestHashKeyIsSeededXXH64(t *testing.T) {
	r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	for n := 0; n <= 200; n++ {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte(r.Uint32())
		}
		for _, seed := range []uint64{0, 1, r.Uint64(), ^uint64(0)} {
			want := xxhash.NewWithSeed(seed)
			want.Write(key)
			if got := hashKey(seed, string(key)); got != want.Sum64() {
				t.Fatalf("hashKey(%#x, %d bytes) = %#x, want %#x", seed, n, got, want.Sum64())
			}
		}
	}
	if got, want := hashKey(0, strings.Repeat("x", 65535)), xxhash.Sum64String(strings.Repeat("x", 65535)); got != want {
		t.Fatalf("hashKey(0, 64 KiB) = %#x, want %#x", got, want)
	}
}

func BenchmarkHashKey(b *testing.B) {
	key := "key:00000000123"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		hashKey(uint64(i), key)
	}
}
