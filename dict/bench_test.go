package dict

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// benchDict opens a zone big enough for keys entries and fills it with ints
// under 16-byte keys.
func benchDict(b *testing.B, keys int) (*Dict, []string) {
	b.Helper()
	size := int64(benchZoneSize)
	d, err := Open(filepath.Join(b.TempDir(), "bench.zone"), Options{Size: size})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	ks := make([]string, keys)
	for i := range ks {
		ks[i] = fmt.Sprintf("key:%011d", i)
		if _, err := d.Set(ks[i], Int(int64(i)), 0, 0); err != nil {
			b.Fatal(err)
		}
	}
	return d, ks
}

func BenchmarkOps(b *testing.B) {
	for _, keys := range benchKeys {
		b.Run("op=incr/keys="+strconv.Itoa(keys), func(b *testing.B) {
			d, ks := benchDict(b, keys)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := d.Incr(ks[i%keys], 1); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("op=get/keys="+strconv.Itoa(keys), func(b *testing.B) {
			d, ks := benchDict(b, keys)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, _, err := d.Get(ks[i%keys]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("op=getinto/keys="+strconv.Itoa(keys), func(b *testing.B) {
			d, ks := benchDict(b, keys)
			val := []byte("0123456789abcdef")
			for _, k := range ks {
				d.Set(k, Bytes(val), 0, 0)
			}
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, _, err := d.GetInto(ks[i%keys], buf); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("op=set/keys="+strconv.Itoa(keys), func(b *testing.B) {
			d, ks := benchDict(b, keys)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := d.Set(ks[i%keys], Int(int64(i)), 0, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("op=add-delete/keys="+strconv.Itoa(keys), func(b *testing.B) {
			d, ks := benchDict(b, keys)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := ks[i%keys]
				if err := d.Delete(k); err != nil {
					b.Fatal(err)
				}
				if _, err := d.Add(k, Int(1), 0, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("op=incrinit-ttl/keys="+strconv.Itoa(keys), func(b *testing.B) {
			d, ks := benchDict(b, keys)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, _, err := d.IncrInit(ks[i%keys], 1, 0, time.Minute); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var benchKeys = []int{1, 1000, 100000}

// benchZoneSize is the zone of the single-process benchmarks: 10 MiB, the
// size of the density target, which holds 160,000 counters.
const benchZoneSize = 10 << 20
