package limiter

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// TestApplyOnceInterleaved replays two changes of one Count's numbers at
// once, each by a Dict of its own, as two processes make them. The first
// stops between its reads and its swap. The second runs whole meanwhile.
// Then the first goes on. The open window must get the change of the
// limit once: its allowance is the final limit less what it counted.
func TestApplyOnceInterleaved(t *testing.T) {
	build := func(limit int64) func(*dict.Dict) error {
		return func(d *dict.Dict) error {
			_, err := NewCount(d, "t", limit, time.Hour)
			return err
		}
	}
	set := func(limit int64) func(*dict.Dict) error {
		return func(d *dict.Dict) error { return SetLive(d, kindCount, "t", Numbers{Limit: limit}, FieldLimit) }
	}
	unset := func(d *dict.Dict) error {
		_, err := UnsetLive(d, kindCount, "t")
		return err
	}
	tests := []struct {
		name          string
		setup         func(*dict.Dict) error // before the window opens; nil for none
		first, second func(*dict.Dict) error
		limit         int64 // in force at the end
	}{
		{"two constructions", nil, build(10), build(10), 10},
		{"construction, then SetLive", nil, build(10), set(20), 20},
		{"SetLive, then construction", nil, set(20), build(10), 20},
		{"two SetLive", nil, set(20), set(30), 30},
		{"SetLive, then UnsetLive", set(20), set(40), unset, 5},
		{"UnsetLive, then SetLive", set(20), unset, set(40), 40},
		{"UnsetLive, then construction", set(20), unset, build(10), 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := testutil.TempZone(t)
			d0, _ := zonetest.OpenAt(t, path, dict.Options{Size: 1 << 20, Shards: 2})
			dA, _ := zonetest.OpenAt(t, path, dict.Options{})
			dB, _ := zonetest.OpenAt(t, path, dict.Options{})
			c, err := NewCount(d0, "t", 5, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if tt.setup != nil {
				if err := tt.setup(d0); err != nil {
					t.Fatal(err)
				}
			}
			for range 3 {
				if _, err := c.Incoming(context.Background(), "k", true); err != nil {
					t.Fatal(err)
				}
			}
			zk := zoneKey(c, "k")
			c = nil // another construction of "t" may differ in this process

			var stopped atomic.Bool
			reached, release := make(chan struct{}), make(chan struct{})
			applyOnceStall = func() {
				if stopped.CompareAndSwap(false, true) {
					close(reached)
					<-release
				}
			}
			defer func() { applyOnceStall = nil }()
			var wg sync.WaitGroup
			var firstErr error
			wg.Add(1)
			go func() {
				defer wg.Done()
				firstErr = tt.first(dA)
			}()
			<-reached
			if err := tt.second(dB); err != nil {
				t.Fatalf("second change = %v", err)
			}
			close(release)
			wg.Wait()
			if firstErr != nil {
				t.Fatalf("first change = %v", firstErr)
			}

			v, _, err := d0.Get(zk)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := v.Float(), float64(tt.limit-3); got != want {
				t.Errorf("allowance of the open window = %v, want %v: the limit %d less 3 counted", got, want, tt.limit)
			}
		})
	}
}
