package clients

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

func TestAddrs(t *testing.T) {
	seed := testutil.Seed(t)
	a := Addrs(seed, 0, 1000)
	if len(a) != 1000 {
		t.Fatalf("Addrs(%d, 0, 1000) has %d keys, want 1000", seed, len(a))
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
	if again := Addrs(seed, 0, 1000); !slices.Equal(a, again) {
		t.Fatalf("Addrs(%d, 0, 1000) differs between calls", seed)
	}
	shared := 0
	for _, k := range Addrs(seed, 1, 1000) {
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

// TestArrivals checks that Arrivals gives every client of every process
// once, each process's in index order, mixed: no process's clients arrive
// in one block, and the same seed gives the same order.
func TestArrivals(t *testing.T) {
	seed := testutil.Seed(t)
	const procs, n = 3, 1000
	as := Arrivals(seed, procs, n)
	if len(as) != procs*n {
		t.Fatalf("Arrivals(%d, %d, %d) has %d arrivals, want %d", seed, procs, n, len(as), procs*n)
	}
	next := make([]int, procs)
	runs := 0 // arrivals from another process than the one before
	for j, a := range as {
		if a.Proc < 0 || a.Proc >= procs || a.I != next[a.Proc] {
			t.Fatalf("arrival %d is %+v, want process in [0, %d) and its client %v", j, a, procs, next)
		}
		next[a.Proc]++
		if j > 0 && a.Proc != as[j-1].Proc {
			runs++
		}
	}
	// Independent draws switch process about (1-1/3) of the time: some
	// 2,000 switches in 3,000, where three blocks would make 2.
	if runs < procs*n/2 {
		t.Errorf("the process changes %d times in %d arrivals: not mixed", runs, procs*n)
	}
	if !slices.Equal(as, Arrivals(seed, procs, n)) {
		t.Errorf("Arrivals(%d, ...) differs between calls", seed)
	}
}
