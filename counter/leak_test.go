package counter_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/counter"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// syncLoops returns how many goroutines that counter.New started are
// alive, whether they have begun to run or not.
func syncLoops() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "created by github.com/shmzone/shmzone/counter.New")
}

// settled polls fn until it returns at most want, for up to a minute, and
// returns its last result: a goroutine that has signalled its end to Close
// may still be returning.
func settled(fn func() int, want int) int {
	n := fn()
	for deadline := time.Now().Add(time.Minute); n > want && time.Now().Before(deadline); n = fn() {
		time.Sleep(time.Millisecond)
	}
	return n
}

// TestCloseLeavesNoGoroutine shows that no goroutine of a Counter outlives
// Close, whether it synced by timer or by hand, and whether Close comes
// while the timer's Sync runs. The dicts have injected clocks, so they run
// no goroutine of their own.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		loops    int // sync loops while the Counter is open
	}{
		{"by hand", 0, 0},
		{"timer", time.Hour, 1},
		{"busy timer", time.Microsecond, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := zonetest.Open(t, dict.Options{})
			before := runtime.NumGoroutine()
			for round := 0; round < 20; round++ {
				c, err := counter.New(d, tt.interval)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				for i := 0; i < 100; i++ {
					c.Incr(key(i), 1)
				}
				if n := syncLoops(); n != tt.loops {
					t.Fatalf("round %d: %d sync loops while open, want %d", round, n, tt.loops)
				}
				if err := c.Close(); err != nil {
					t.Fatalf("Close() = %v", err)
				}
				if n := settled(syncLoops, 0); n != 0 {
					t.Fatalf("round %d: %d sync loops after Close, want 0", round, n)
				}
			}
			if n := settled(runtime.NumGoroutine, before); n > before {
				t.Errorf("%d goroutines after Close, %d before New", n, before)
			}
			if v, _, err := d.Get(key(0)); err != nil || v.Int() != 20 {
				t.Errorf("dict Get(%q) = %v, %v; want 20", key(0), v, err)
			}
		})
	}
}
