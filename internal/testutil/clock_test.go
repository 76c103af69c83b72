package testutil

import (
	"sync"
	"testing"
	"time"
)

// TestClock: a Clock reads Epoch until moved, Set and SetMilli place it
// after Epoch, Advance moves it from where it is, and its views agree.
func TestClock(t *testing.T) {
	var c Clock
	want := func(when string, d time.Duration) {
		t.Helper()
		if got := c.Now(); !got.Equal(Epoch.Add(d)) {
			t.Errorf("%s: Now() = %v, want %v", when, got, Epoch.Add(d))
		}
		if got, ms := c.UnixMilli(), Epoch.Add(d).UnixMilli(); got != ms {
			t.Errorf("%s: UnixMilli() = %d, want %d", when, got, ms)
		}
		if got := c.Since(); got != d {
			t.Errorf("%s: Since() = %v, want %v", when, got, d)
		}
	}
	want("zero value", 0)
	if c.UnixMilli() != EpochMilli {
		t.Errorf("zero value: UnixMilli() = %d, want EpochMilli %d", c.UnixMilli(), EpochMilli)
	}
	c.Advance(1500 * time.Millisecond)
	want("after Advance(1.5s)", 1500*time.Millisecond)
	c.Advance(-time.Second)
	want("after Advance(-1s)", 500*time.Millisecond)
	c.Set(time.Minute)
	want("after Set(1m)", time.Minute)
	c.SetMilli(250)
	want("after SetMilli(250)", 250*time.Millisecond)
	c.Set(-time.Millisecond)
	want("after Set(-1ms)", -time.Millisecond)
	c.Set(time.Microsecond)
	want("after Set(1µs)", time.Microsecond) // UnixMilli rounds down
}

// TestClockConcurrent: goroutines advancing one Clock lose no step. Run it
// with -race.
func TestClockConcurrent(t *testing.T) {
	var c Clock
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c.Advance(time.Millisecond)
				c.UnixMilli()
			}
		}()
	}
	wg.Wait()
	if got := c.Since(); got != 4*time.Second {
		t.Errorf("after 4000 Advance(1ms): Since() = %v, want 4s", got)
	}
}
