package testutil

import (
	"net/netip"
	"slices"
	"testing"
)

func TestClientAddrs(t *testing.T) {
	seed := Seed(t)
	a := ClientAddrs(seed, 0, 1000)
	if len(a) != 1000 {
		t.Fatalf("ClientAddrs(%d, 0, 1000) has %d keys, want 1000", seed, len(a))
	}
	seen := map[string]bool{}
	for _, k := range a {
		if _, err := netip.ParseAddrPort(k); err != nil {
			t.Fatalf("key %q is not an address and port: %v", k, err)
		}
		if seen[k] {
			t.Fatalf("key %q twice", k)
		}
		seen[k] = true
	}
	if again := ClientAddrs(seed, 0, 1000); !slices.Equal(a, again) {
		t.Fatalf("ClientAddrs(%d, 0, 1000) differs between calls", seed)
	}
	shared := 0
	for _, k := range ClientAddrs(seed, 1, 1000) {
		if seen[k] {
			shared++
		}
	}
	// The odds of one shared key are about 10⁶/2⁴⁹; a second stream that
	// repeated the first would share all of them.
	if shared > 1 {
		t.Fatalf("streams 0 and 1 share %d of 1,000 keys", shared)
	}
}

func TestPicker(t *testing.T) {
	p := NewPicker(Seed(t))
	const n, draws = 1000, 100_000
	var hits [n]int
	for range draws {
		i := p.Next(n)
		if i < 0 || i >= n {
			t.Fatalf("Next(%d) = %d", n, i)
		}
		hits[i]++
	}
	// Each index expects 100 draws; a generator stuck in a short cycle, or
	// one that skips indexes, leaves some at 0 or far above.
	for i, h := range hits {
		if h < 40 || h > 200 {
			t.Fatalf("index %d drawn %d times of %d, want about %d", i, h, draws, draws/n)
		}
	}
	if q := NewPicker(0); q.Next(n) == q.Next(n) && q.Next(n) == q.Next(n) {
		t.Fatalf("NewPicker(0) repeats one index")
	}
}
