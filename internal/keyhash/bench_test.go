package keyhash

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

var sink uint64

func BenchmarkSum(b *testing.B) {
	for _, shape := range Shapes {
		ks := Keys(shape)
		b.Run("keys="+shape, func(b *testing.B) {
			b.ReportAllocs()
			var s uint64
			for i := 0; i < b.N; i++ {
				s += Sum(0x1234567, ks[i&4095])
			}
			sink = s
		})
	}
}

// BenchmarkSum2 hashes keys given as a prefix and a name. Sum of the same
// keys joined runs beside it. The first two shapes are a limiter's key, an
// 8-byte prefix with a name of 15 or 16 bytes. The third has a 6-byte prefix
// and a 15-byte name. The last is 40 bytes, split inside a word.
func BenchmarkSum2(b *testing.B) {
	for _, shape := range []struct {
		name, prefix, format string
	}{
		{"8+15", "count|t|", "key:%011d"},
		{"8+16", "count|t|", "key:%012d"},
		{"6+15", "hits|u", "key:%011d"},
		{"13+27", "session|user|", "0123456789abcdef:%010d"},
	} {
		r := rand.New(rand.NewPCG(1, 2))
		names := make([]string, 4096)
		joined := make([]string, 4096)
		for i := range names {
			names[i] = fmt.Sprintf(shape.format, r.Int64N(1e10))
			joined[i] = shape.prefix + names[i]
		}
		prefix := shape.prefix
		b.Run(shape.name+"/Sum", func(b *testing.B) {
			var s uint64
			for i := 0; i < b.N; i++ {
				s += Sum(0x1234567, joined[i&4095])
			}
			sink = s
		})
		b.Run(shape.name+"/Sum2", func(b *testing.B) {
			b.ReportAllocs()
			var s uint64
			for i := 0; i < b.N; i++ {
				s += Sum2(0x1234567, prefix, names[i&4095])
			}
			sink = s
		})
	}
}
