package clients

import (
	"errors"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// TestTurns has three takers, each with a mapping of its own of one
// counter file, create their clients: together they create every client
// once, in the order of Arrivals.
func TestTurns(t *testing.T) {
	seed := testutil.Seed(t)
	const procs, n = 3, 200
	as := Arrivals(seed, procs, n)
	path := filepath.Join(t.TempDir(), "turns")
	var (
		mu  sync.Mutex
		got []Arrival
		wg  sync.WaitGroup
	)
	errs := make([]error, procs)
	for id := range procs {
		tu, err := OpenTurns(path)
		if err != nil {
			t.Fatal(err)
		}
		defer tu.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[id] = tu.Take(id, as, time.Minute, func(i int) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, Arrival{Proc: id, I: i})
				return nil
			})
		}()
	}
	wg.Wait()
	for id, err := range errs {
		if err != nil {
			t.Errorf("taker %d: %v", id, err)
		}
	}
	if !slices.Equal(got, as) {
		t.Errorf("the takers created %d clients, not in the order of the %d arrivals", len(got), len(as))
	}
}

// TestTurnsTimeout: a taker whose turn never comes (the process before it
// is gone) gives up with an error, and one whose create fails returns it.
func TestTurnsTimeout(t *testing.T) {
	tu, err := OpenTurns(filepath.Join(t.TempDir(), "turns"))
	if err != nil {
		t.Fatal(err)
	}
	defer tu.Close()
	as := []Arrival{{Proc: 1, I: 0}, {Proc: 0, I: 0}}
	err = tu.Take(0, as, 10*time.Millisecond, func(int) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "did not come") {
		t.Errorf("Take with the other process absent = %v, want its turn did not come", err)
	}
	boom := errors.New("boom")
	if err := tu.Take(1, as, time.Minute, func(int) error { return boom }); err != boom {
		t.Errorf("Take with a failing create = %v, want %v", err, boom)
	}
}
