package dict

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// updateForcible is UpdateOutcome's Forcible.
func updateForcible(d *Dict, key string, fn func(Value, bool) (Value, time.Duration, bool)) (bool, error) {
	out, err := d.UpdateOutcome(key, fn)
	return out.Forcible, err
}

// TestUpdateMutateForcible checks that UpdateOutcome and MutateOutcome
// report Forcible exactly when they evicted live entries, as Set does: on
// every call, forcible is true iff Stats().Evictions grew.
func TestUpdateMutateForcible(t *testing.T) {
	store := func(v Value) func(Value, bool) (Value, time.Duration, bool) {
		return func(Value, bool) (Value, time.Duration, bool) { return v, 0, true }
	}
	ops := []struct {
		name string
		do   func(d *Dict, key string) (bool, error)
	}{
		{"UpdateOutcome", func(d *Dict, key string) (bool, error) {
			return updateForcible(d, key, store(Bytes(make([]byte, 24))))
		}},
		{"MutateOutcome", func(d *Dict, key string) (bool, error) {
			out, err := d.MutateOutcome(key, 16, func(b []byte, found bool) (bool, time.Duration) { b[0]++; return true, 0 })
			return out.Forcible, err
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			d, _ := openTest(t, Options{Size: specMinZone, Shards: 1})
			evictions := func() uint64 { return d.Stats().Evictions }
			// An empty zone makes room without evicting.
			if f, err := op.do(d, "first"); f || err != nil {
				t.Fatalf("%s(%q) on an empty zone = %v, %v; want false, nil", op.name, "first", f, err)
			}
			seen := 0
			for i := 0; seen < 50; i++ {
				if i > 100_000 {
					t.Fatalf("no forcible %s after %d new keys", op.name, i)
				}
				// Keys of several lengths, so that sizes and classes vary.
				key := fmt.Sprintf("k%0*d", 1+i%24, i)
				before := evictions()
				f, err := op.do(d, key)
				if err != nil && !errors.Is(err, ErrNoMemory) {
					t.Fatalf("%s(%q) = %v", op.name, key, err)
				}
				if grew := evictions() > before; f != grew {
					t.Fatalf("%s(%q) = forcible %v, err %v; evictions grew: %v", op.name, key, f, err, grew)
				}
				if f {
					seen++
				}
				// Rewriting the key just written, in place, evicts nothing.
				if err == nil {
					if f, err := op.do(d, key); f || err != nil {
						t.Fatalf("%s(%q) again = %v, %v; want false, nil", op.name, key, f, err)
					}
				}
			}
		})
	}
	// A live key's new length is no entry write: Update falls back to the
	// shard's lock, and reports what storing there evicted.
	t.Run("Update resize", func(t *testing.T) {
		d, _ := openTest(t, Options{Size: specMinZone, Shards: 1})
		for i := 0; d.Stats().Evictions == 0; i++ {
			if i > 100_000 {
				t.Fatal("no eviction after 100000 new keys")
			}
			if _, err := d.Set(fmt.Sprintf("fill%d", i), Bytes(make([]byte, 40)), 0, 0); err != nil && !errors.Is(err, ErrNoMemory) {
				t.Fatal(err)
			}
		}
		seen := 0
		for i := 0; i < 400; i++ {
			n := 16 + (i%64)*32 // another length on every call
			before := d.Stats().Evictions
			f, err := updateForcible(d, "grow", store(Bytes(make([]byte, n))))
			if err != nil && !errors.Is(err, ErrNoMemory) {
				t.Fatalf("UpdateOutcome(%q) to %d bytes = %v", "grow", n, err)
			}
			if grew := d.Stats().Evictions > before; f != grew {
				t.Fatalf("UpdateOutcome(%q) to %d bytes = forcible %v, err %v; evictions grew: %v", "grow", n, f, err, grew)
			}
			if f {
				seen++
			}
			// The same length again is an entry write: no eviction.
			if err == nil {
				if f, err := updateForcible(d, "grow", store(Bytes(make([]byte, n)))); f || err != nil {
					t.Fatalf("UpdateOutcome(%q) again at %d bytes = %v, %v; want false, nil", "grow", n, f, err)
				}
			}
		}
		if seen == 0 {
			t.Error("no resize of a live key in a full zone evicted")
		}
	})
	t.Run("Update delete", func(t *testing.T) {
		d, _ := openTest(t, Options{Size: specMinZone, Shards: 1})
		if _, err := d.Set("k", Int(1), 0, 0); err != nil {
			t.Fatal(err)
		}
		del := func(Value, bool) (Value, time.Duration, bool) { return Value{}, 0, false }
		if f, err := updateForcible(d, "k", del); f || err != nil {
			t.Fatalf("UpdateForcible(delete) = %v, %v; want false, nil", f, err)
		}
	})
}
