package limiter

import (
	"context"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// TestHotPathsAllocateNothing proves invariant I6 with AllocsPerRun.
func TestHotPathsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers")
	}
	d, clk := zonetest.Open(t, dict.Options{})
	ctx := context.Background()
	req, _ := NewReq(d, "t", 1, 1e6) // a state that lasts: Uncommit finds it
	count, _ := NewCount(d, "t", 1<<40, time.Hour)
	conn, _ := NewConn(d, "t", 1<<40, 0, time.Millisecond)
	sw, _ := NewSlidingWindow(d, "t", 1<<30, time.Hour)
	gcra, _ := NewGCRA(d, "t", 1e6, 1<<20)
	const key = "key:00000000001"
	ls := []Limiter{req, count, sw, gcra}
	keys := []string{"r:" + key, "c:" + key, "s:" + key, "g:" + key}
	tests := []struct {
		name string
		fn   func() error
	}{
		{"Req.Incoming", func() error { _, err := req.Incoming(ctx, key, true); return err }},
		{"Req.dry", func() error { _, err := req.Incoming(ctx, key, false); return err }},
		{"Req.Incoming+Uncommit", func() error {
			if _, err := req.Incoming(ctx, key, true); err != nil {
				return err
			}
			return req.Uncommit(ctx, key)
		}},
		{"Count.Incoming", func() error { _, err := count.Incoming(ctx, "c"+key, true); return err }},
		{"Count.dry", func() error { _, err := count.Incoming(ctx, "c"+key, false); return err }},
		{"Count.Uncommit", func() error { return count.Uncommit(ctx, "c"+key) }},
		{"Conn.Incoming+Leaving", func() error {
			if _, err := conn.Incoming(ctx, "n"+key, true); err != nil {
				return err
			}
			_, err := conn.Leaving(ctx, "n"+key, time.Millisecond)
			return err
		}},
		{"Conn.dry", func() error { _, err := conn.Incoming(ctx, "n"+key, false); return err }},
		{"SlidingWindow.Incoming", func() error { _, err := sw.Incoming(ctx, "s"+key, true); return err }},
		{"SlidingWindow.dry", func() error { _, err := sw.Incoming(ctx, "s"+key, false); return err }},
		{"SlidingWindow.Uncommit", func() error { return sw.Uncommit(ctx, "s"+key) }},
		{"GCRA.Incoming", func() error { _, err := gcra.Incoming(ctx, "g"+key, true); return err }},
		{"GCRA.dry", func() error { _, err := gcra.Incoming(ctx, "g"+key, false); return err }},
		{"GCRA.Uncommit", func() error { return gcra.Uncommit(ctx, "g"+key) }},
		{"Combine", func() error { _, err := Combine(ctx, ls, keys); return err }},
		{"CombineN", func() error { _, err := CombineN(ctx, ls, keys, 2); return err }},
		{"Req.IncomingN+UncommitN", func() error {
			if _, err := req.IncomingN(ctx, key, 3, true); err != nil {
				return err
			}
			return req.UncommitN(ctx, key, 3)
		}},
		{"Count.IncomingN+UncommitN", func() error {
			if _, err := count.IncomingN(ctx, "c"+key, 3, true); err != nil {
				return err
			}
			return count.UncommitN(ctx, "c"+key, 3)
		}},
		{"Conn.IncomingN+LeavingN", func() error {
			if _, err := conn.IncomingN(ctx, "n"+key, 3, true); err != nil {
				return err
			}
			_, err := conn.LeavingN(ctx, "n"+key, 3, time.Millisecond)
			return err
		}},
		{"SlidingWindow.IncomingN+UncommitN", func() error {
			if _, err := sw.IncomingN(ctx, "s"+key, 3, true); err != nil {
				return err
			}
			return sw.UncommitN(ctx, "s"+key, 3)
		}},
		{"GCRA.IncomingN+UncommitN", func() error {
			if _, err := gcra.IncomingN(ctx, "g"+key, 3, true); err != nil {
				return err
			}
			return gcra.UncommitN(ctx, "g"+key, 3)
		}},
		{"Reset", func() error {
			for _, l := range []Limiter{req, count, conn, sw, gcra} {
				if err := l.Reset(ctx, "r"+key); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			allocs := testing.AllocsPerRun(1000, func() {
				clk.Advance(time.Millisecond)
				if e := tt.fn(); e != nil {
					err = e
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if allocs != 0 {
				t.Errorf("%s allocates %v times per call, want 0", tt.name, allocs)
			}
		})
	}
}
