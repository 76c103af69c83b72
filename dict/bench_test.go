package dict

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// benchZoneSize is the zone of the benchmarks: 10 MiB, the size of the
// density target, which holds 160,000 counters; or the size that
// testutil.BenchZoneEnv gives (benchZone).
const benchZoneSize = 10 << 20

// benchZone returns the size of the zone b opens.
func benchZone(b *testing.B) int64 { return testutil.BenchZone(b, benchZoneSize) }

var benchKeys = []int{1, 1000, 100000}

// benchDict opens a zone of benchZoneSize and fills it with ints under
// 16-byte keys.
func benchDict(b *testing.B, keys int) (*Dict, []string) {
	b.Helper()
	d, err := Open(filepath.Join(b.TempDir(), "bench.zone"), Options{Size: benchZone(b)})
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

// benchOps are the operations of BenchmarkOps: setup prepares the filled
// dict, op does the i-th operation on key k.
var benchOps = []struct {
	name  string
	setup func(b *testing.B, d *Dict, ks []string)
	op    func(d *Dict, k string, i int) error
}{
	{"incr", nil, func(d *Dict, k string, _ int) error {
		_, err := d.Incr(k, 1)
		return err
	}},
	{"get", nil, func(d *Dict, k string, _ int) error {
		_, _, err := d.Get(k)
		return err
	}},
	{"getinto", setBytes, func(d *Dict, k string, _ int) error {
		_, _, err := d.GetInto(k, benchBuf[:])
		return err
	}},
	{"set", nil, func(d *Dict, k string, i int) error {
		_, err := d.Set(k, Int(int64(i)), 0, 0)
		return err
	}},
	{"add-delete", nil, func(d *Dict, k string, _ int) error {
		if err := d.Delete(k); err != nil {
			return err
		}
		_, err := d.Add(k, Int(1), 0, 0)
		return err
	}},
	{"update", setBytes, func(d *Dict, k string, _ int) error {
		return d.Update(k, rewrite)
	}},
	{"mutate", setBytes, func(d *Dict, k string, _ int) error {
		return d.Mutate(k, 16, 0, add1)
	}},
	{"incrinit-ttl", nil, func(d *Dict, k string, _ int) error {
		_, _, err := d.IncrInit(k, 1, 0, time.Minute)
		return err
	}},
}

// rewrite is an Update that stores the value it finds again, in place.
func rewrite(cur Value, ok bool) (Value, time.Duration, bool) { return cur, 0, ok }

// benchBuf is GetInto's destination: room for the 16-byte values.
var benchBuf [64]byte

// setBytes gives every key a 16-byte value.
func setBytes(b *testing.B, d *Dict, ks []string) {
	val := []byte("0123456789abcdef")
	for _, k := range ks {
		if _, err := d.Set(k, Bytes(val), 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOps(b *testing.B) {
	for _, keys := range benchKeys {
		for _, bo := range benchOps {
			b.Run("op="+bo.name+"/keys="+strconv.Itoa(keys), func(b *testing.B) {
				d, ks := benchDict(b, keys)
				if bo.setup != nil {
					bo.setup(b, d, ks)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := bo.op(d, ks[i%keys], i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkGuardFaults measures what Options.GuardFaults adds to an
// operation: the same Incr and Get over 1,000 keys without and with it.
func BenchmarkGuardFaults(b *testing.B) {
	for _, guard := range []bool{false, true} {
		for _, bo := range benchOps[:2] {
			b.Run(fmt.Sprintf("op=%s/guard=%t", bo.name, guard), func(b *testing.B) {
				d, err := Open(filepath.Join(b.TempDir(), "bench.zone"), Options{Size: benchZone(b), GuardFaults: guard})
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close()
				ks := make([]string, 1000)
				for i := range ks {
					ks[i] = fmt.Sprintf("key:%011d", i)
					if _, err := d.Set(ks[i], Int(int64(i)), 0, 0); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := bo.op(d, ks[i%len(ks)], i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkJoinedKey measures IncrInitNumTTL on a key a caller joins from a
// prefix and a name for each call, as a limiter does: of a string made
// before the timing, of the key joined on the stack, and of the key that
// KeyOf joins and hashes from its parts.
func BenchmarkJoinedKey(b *testing.B) {
	const prefix = "count|t|"
	d, names := benchDict(b, 1000)
	joined := make([]string, len(names))
	for i, n := range names {
		joined[i] = prefix + n
		if _, _, _, err := d.IncrInitNumTTL(joined[i], -1, 1<<53, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("key=made-before", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, _, err := d.IncrInitNumTTL(joined[i%len(joined)], -1, 1<<53, time.Hour); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("key=joined", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var buf [128]byte
			name := names[i%len(names)]
			n := copy(buf[copy(buf[:], prefix):], name) + len(prefix)
			if _, _, _, err := d.IncrInitNumTTL(bytesString(buf[:n]), -1, 1<<53, time.Hour); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("key=KeyOf", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var buf [128]byte
			k := d.KeyOf(buf[:], prefix, names[i%len(names)])
			if _, _, _, err := d.IncrInitNumTTLKey(k, -1, 1<<53, time.Hour); err != nil {
				b.Fatal(err)
			}
		}
	})
}
