package dict

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Revise under goroutines: no increment lost, no state read torn; and the
// allocations of its hot paths.

const (
	raceWriters = 8
	raceKeys    = 4
	raceReaders = 2
)

// raceOps is the number of increments per writer, few enough for the
// race detector.
func raceOps() int { return 5000 }

// TestReviseNoLostUpdate: raceWriters goroutines add one to both counters
// of raceKeys 16-byte states with Revise (the keys absent at first, so
// that the creation under the shard's lock races too), while readers Get
// the states: every state read has its two counters equal (fn always
// changes both: a torn read would show them apart), and each key ends
// with every increment.
func TestReviseNoLostUpdate(t *testing.T) {
	d, _ := openTest(t, Options{Shards: 1})
	n := raceOps()
	var stop atomic.Bool
	var wg, readers sync.WaitGroup
	errs := make(chan error, raceWriters+raceReaders)
	for r := 0; r < raceReaders; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			errs <- readStates(d, &stop)
		}()
	}
	for w := 0; w < raceWriters; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				key := raceKey((w + i) % raceKeys)
				if _, err := d.Revise(key, 16, incBoth); err != nil {
					errs <- fmt.Errorf("Revise(%q) #%d = %w", key, i, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	stop.Store(true)
	readers.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := uint64(raceWriters * n / raceKeys)
	for k := 0; k < raceKeys; k++ {
		v, _, err := d.Get(raceKey(k))
		if err != nil || len(v.Bytes()) != 16 {
			t.Fatalf("Get(%q) = %v, %v", raceKey(k), v, err)
		}
		if a, b := counters(v.Bytes()); a != want || b != want {
			t.Errorf("%q holds %d, %d after %d increments", raceKey(k), a, b, want)
		}
	}
}

func raceKey(k int) string { return fmt.Sprintf("state-%d", k) }

// readStates reads the race keys until stop: each state must be whole.
func readStates(d *Dict, stop *atomic.Bool) error {
	buf := make([]byte, 0, 16)
	for i := 0; !stop.Load(); i++ {
		key := raceKey(i % raceKeys)
		v, _, err := d.GetInto(key, buf)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return fmt.Errorf("Get(%q) = %w", key, err)
		case len(v.Bytes()) != 16:
			return fmt.Errorf("Get(%q) = %d bytes, want 16", key, len(v.Bytes()))
		default:
			if a, b := counters(v.Bytes()); a != b {
				return fmt.Errorf("Get(%q) = counters %d and %d: a torn state", key, a, b)
			}
		}
	}
	return nil
}

// TestReviseZeroAllocs: Revise and ReviseInt of a live key allocate
// nothing, whether fn stores or rejects (STYLE rule 10, as TestZeroAllocs).
func TestReviseZeroAllocs(t *testing.T) {
	d, _ := openTest(t, Options{Shards: 1})
	specSet(t, d, "state:0000000001", Bytes(b16(pair(0, 0))), time.Hour, 0)
	specSet(t, d, "count:0000000001", Int(0), time.Hour, 0)
	reject := func(s State, _ bool) (State, bool, time.Duration) { return s, false, 0 }
	incr := func(n int64, _ bool) (int64, bool, time.Duration) { return n + 1, true, 0 }
	rejectInt := func(n int64, _ bool) (int64, bool, time.Duration) { return n, false, 0 }
	tests := []struct {
		name string
		f    func() error
	}{
		{"Revise store", func() error { _, err := d.Revise("state:0000000001", 16, incBoth); return err }},
		{"Revise store TTL", func() error {
			_, err := d.Revise("state:0000000001", 16, func(s State, f bool) (State, bool, time.Duration) {
				s, _, _ = incBoth(s, f)
				return s, true, time.Hour
			})
			return err
		}},
		{"Revise reject", func() error { _, err := d.Revise("state:0000000001", 16, reject); return err }},
		{"ReviseInt store", func() error { _, err := d.ReviseInt("count:0000000001", incr); return err }},
		{"ReviseInt reject", func() error { _, err := d.ReviseInt("count:0000000001", rejectInt); return err }},
		{"Revise reject absent", func() error { _, err := d.Revise("absent:000000001", 16, reject); return err }},
	}
	for _, tt := range tests {
		var err error
		allocs := testing.AllocsPerRun(1000, func() {
			if e := tt.f(); e != nil {
				err = e
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if allocs != 0 {
			t.Errorf("%s: %v allocations per call, want 0", tt.name, allocs)
		}
	}
	if v, _, err := d.Get("count:0000000001"); err != nil || v.Int() < 1000 {
		t.Fatalf("Get(count) = %v, %v after the runs, want at least 1000", v, err)
	}
}
