package testutil

import (
	"testing"
)

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
