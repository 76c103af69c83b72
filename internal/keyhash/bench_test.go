package keyhash

import (
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
