package dict

import (
	"path/filepath"
	"testing"
)

// The hot paths allocate nothing (STYLE rule 10): reads of numbers, reads of
// bytes into a buffer with room, writes that fit the entry's chunk,
// increments and compare-and-swap, and a Delete+Add pair. Each runs with an injected clock (no
// ticker goroutine) and with the default coarse clock.
func TestZeroAllocs(t *testing.T) {
	clocks := []struct {
		name string
		o    Options
	}{
		{"clock=injected", Options{Clock: func() int64 { return 1_700_000_000_000 }}},
		{"clock=default", Options{}},
	}
	for _, c := range clocks {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Size = 1 << 20
			d, err := Open(filepath.Join(t.TempDir(), "allocs.zone"), o)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			const (
				num   = "counter:00000001" // 16-byte keys, as counters have
				cas   = "counter:00000002"
				bkey  = "bytes:0000000001"
				bcas  = "bytes:0000000002"
				other = "counter:00000003"
				fnum  = "counter:00000004"
			)
			val := []byte("0123456789abcdef")
			alt := []byte("fedcba9876543210")
			for _, kv := range []struct {
				key string
				v   Value
			}{{num, Int(1)}, {cas, Int(0)}, {bkey, Bytes(val)}, {bcas, Bytes(val)}, {other, Int(7)}, {fnum, Float(0.5)}} {
				if _, err := d.Set(kv.key, kv.v, 0, 0); err != nil {
					t.Fatalf("Set(%q) = %v", kv.key, err)
				}
			}
			buf := make([]byte, 0, 64)
			var n int64
			flip := false
			tests := []struct {
				name string
				f    func() error
			}{
				{"Get int", func() error { _, _, err := d.Get(num); return err }},
				{"GetInto bytes", func() error { _, _, err := d.GetInto(bkey, buf); return err }},
				{"Set same-size int", func() error { n++; _, err := d.Set(num, Int(n), 0, 0); return err }},
				{"Set same-size bytes", func() error { _, err := d.Set(bkey, Bytes(val), 0, 1); return err }},
				{"Incr", func() error { _, err := d.Incr(num, 1); return err }},
				{"IncrInit existing key", func() error { _, _, err := d.IncrInit(num, 1, 0, 0); return err }},
				{"Incr float", func() error { _, err := d.Incr(fnum, 1); return err }}, // checks the sum fits an int64
				{"CompareAndSwap int", func() error {
					// cas holds 0 or 1: swap it to the other.
					old := int64(0)
					if flip {
						old = 1
					}
					ok, err := d.CompareAndSwap(cas, Int(old), Int(1-old), 0)
					if ok {
						flip = !flip
					} else if err == nil {
						t.Errorf("CompareAndSwap(%q, %d, %d) = false, want true", cas, old, 1-old)
					}
					return err
				}},
				{"CompareAndSwap same-size bytes", func() error {
					old, new := val, alt
					if flip {
						old, new = alt, val
					}
					ok, err := d.CompareAndSwap(bcas, Bytes(old), Bytes(new), 0)
					if ok {
						flip = !flip
					} else if err == nil {
						t.Errorf("CompareAndSwap(%q, %q, %q) = false, want true", bcas, old, new)
					}
					return err
				}},
				// Not a promised path, but it allocates nothing either:
				// the chunk goes back to its page and is taken again.
				{"Delete+Add", func() error {
					if err := d.Delete(other); err != nil {
						return err
					}
					_, err := d.Add(other, Int(7), 0, 0)
					return err
				}},
			}
			for _, tt := range tests {
				flip = false
				var err error
				allocs := testing.AllocsPerRun(1000, func() {
					if e := tt.f(); e != nil {
						err = e
					}
				})
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				t.Logf("%s: %v allocations per call", tt.name, allocs)
				if allocs != 0 {
					t.Errorf("%s: %v allocations per call, want 0", tt.name, allocs)
				}
			}
			if v, _, err := d.Get(num); err != nil || v.Int() < 1000 {
				t.Fatalf("Get(%q) = %v, %v after the runs, want at least 1000", num, v, err)
			}
			if err := d.Check(); err != nil {
				t.Fatalf("Check = %v", err)
			}
		})
	}
}
