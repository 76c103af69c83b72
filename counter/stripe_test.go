package counter

import (
	"sync"
	"testing"
)

// TestStripe checks stripe's range, that a goroutine keeps its stripe, and
// that goroutines get different ones: if the compiler put the zero-sized
// variable off the stack, every goroutine would share one stripe.
func TestStripe(t *testing.T) {
	for n := 1; n <= maxStripes; n *= 2 {
		if s := stripe(n); s < 0 || s >= n || stripe(n) != s {
			t.Errorf("stripe(%d) = %d, then %d; want one value in [0, %d)", n, s, stripe(n), n)
		}
	}
	const goroutines = 8
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	release := make(chan struct{})
	got := make([]int, goroutines)
	ready.Add(goroutines)
	for g := range got {
		wg.Go(func() {
			got[g] = stripe(maxStripes)
			ready.Done()
			<-release // every goroutine is alive at once, on its own stack
		})
	}
	ready.Wait()
	close(release)
	wg.Wait()
	distinct := map[int]bool{}
	for _, s := range got {
		distinct[s] = true
	}
	if len(distinct) < 2 {
		t.Errorf("stripe(%d) in %d goroutines = %v: all alike", maxStripes, goroutines, got)
	}
}

func TestStripeCount(t *testing.T) {
	tests := []struct{ procs, want int }{
		{1, 8}, {2, 8}, {4, 8}, {5, 16}, {8, 16}, {16, 32}, {64, 32},
	}
	for _, tt := range tests {
		if got := stripeCount(tt.procs); got != tt.want {
			t.Errorf("stripeCount(%d) = %d, want %d", tt.procs, got, tt.want)
		}
	}
}

// TestHandleStripe checks that a Handle's table maps stripe(maxStripes)
// onto the cell of stripe(n), the one Incr picks at the same stack depth,
// for every stripe count n.
func TestHandleStripe(t *testing.T) {
	for n := minStripes; n <= maxStripes; n *= 2 {
		c, _ := newInternal(t, sweepEvery)
		c.stripes, c.arenas = n, make([]arena, n)
		h := c.Key("k")
		h.Add(1)
		e := c.idx.load("k")
		if e == nil {
			e = c.idx.fresh["k"]
		}
		if got := e.cells[stripe(n)].Load().n.Load(); got != 1 {
			t.Errorf("%d stripes: Add(1) left %d in the stripe Incr uses, want 1", n, got)
		}
	}
}
