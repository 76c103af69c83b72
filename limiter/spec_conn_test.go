package limiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

func TestConnVectors(t *testing.T) {
	// A step: commit ("c"), dry run ("dry"), Leaving ("leave"), Uncommit
	// ("uncommit") or SetMax and SetBurst ("set", to max and burst). For
	// Incoming, delay in seconds and conn (State); for leave, conn is what
	// Leaving returns.
	type step struct {
		op         string
		rej        bool
		delay      float64
		conn       int64
		committed  bool
		max, burst int64
	}
	type vec struct {
		id         string
		max, burst int64
		steps      []step
		stored     int64 // the key's count at the end
	}
	c := func(delay float64, conn int64) step { return step{op: "c", delay: delay, conn: conn, committed: true} }
	dry := func(delay float64, conn int64) step { return step{op: "dry", delay: delay, conn: conn} }
	rej := step{op: "c", rej: true}
	var conn1 []step
	for n := int64(1); n <= 10; n++ {
		conn1 = append(conn1, c(float64((n-1)/2), n))
	}
	conn1 = append(conn1, rej, rej)
	conn2 := []step{dry(0, 1), dry(0, 1), c(0, 1), dry(0, 2), c(0, 2)}
	for range 7 {
		conn2 = append(conn2, dry(1, 3))
	}
	leave := func(n int64) step { return step{op: "leave", conn: n} }
	vecs := []vec{
		{id: "CONN-1", max: 2, burst: 8, steps: conn1, stored: 10},
		{id: "CONN-2", max: 2, burst: 8, steps: conn2, stored: 2},
		{id: "CONN-3", max: 2, burst: 8, steps: []step{
			c(0, 1), c(0, 2), c(1, 3), c(1, 4), leave(3), c(1, 4), c(2, 5), c(2, 6), leave(5),
			c(2, 6), c(3, 7), c(3, 8), c(4, 9), c(4, 10),
		}, stored: 10},
		{id: "CONN-4", max: 2, burst: 8, steps: []step{
			c(0, 1), {op: "uncommit"}, c(0, 1), {op: "uncommit"}, c(0, 1), {op: "uncommit"},
		}, stored: 0},
		{id: "CONN-5", max: 2, burst: 1, steps: []step{
			c(0, 1), c(0, 2), c(1, 3), rej, {op: "set", max: 5, burst: 2},
			c(0, 4), c(0, 5), c(1, 6), c(1, 7), rej, rej,
		}, stored: 7},
	}
	for _, leased := range []bool{false, true} {
		for _, v := range vecs {
			t.Run(fmt.Sprintf("%s/leased=%v", v.id, leased), func(t *testing.T) {
				d, _ := zonetest.Open(t, dict.Options{})
				var l *Conn
				var err error
				if leased {
					l, err = NewLeasedConn(d, "t", v.max, v.burst, time.Second, time.Minute)
				} else {
					l, err = NewConn(d, "t", v.max, v.burst, time.Second)
				}
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				for i, s := range v.steps {
					switch s.op {
					case "set":
						if err := l.SetMax(s.max); err != nil {
							t.Fatal(err)
						}
						if err := l.SetBurst(s.burst); err != nil {
							t.Fatal(err)
						}
					case "uncommit":
						if err := l.Uncommit(ctx, "foo"); err != nil {
							t.Fatalf("step %d: Uncommit = %v", i+1, err)
						}
					case "leave":
						n, err := l.Leaving(ctx, "foo", 0)
						if err != nil || n != s.conn {
							t.Errorf("step %d: Leaving = %d, %v; want %d", i+1, n, err, s.conn)
						}
					default:
						got, err := l.Incoming(ctx, "foo", s.op == "c")
						if err != nil {
							t.Fatalf("step %d: Incoming(%s): %v", i+1, s.op, err)
						}
						if s.rej {
							if got.Allowed || got.Committed {
								t.Errorf("step %d: Incoming(%s) = %+v, want rejected", i+1, s.op, got)
							}
							continue
						}
						if !got.Allowed || got.Delay != secs(s.delay) || got.State != float64(s.conn) || got.Committed != s.committed {
							t.Errorf("step %d: Incoming(%s) = (allowed %v, delay %v, conn %v, committed %v), want (true, %v, %d, %v)",
								i+1, s.op, got.Allowed, got.Delay, got.State, got.Committed, secs(s.delay), s.conn, s.committed)
						}
					}
				}
				if got := inFlight(t, l, "foo"); got != v.stored {
					t.Errorf("requests in flight at the end = %d, want %d", got, v.stored)
				}
			})
		}
	}
}

// TestConnHugeBurst: max+burst saturates at MaxInt64 instead of wrapping
// negative, so SetBurst(MaxInt64) means no practical limit, not a key that
// rejects everything.
func TestConnHugeBurst(t *testing.T) {
	for _, leased := range []bool{false, true} {
		for _, op := range []string{"dry", "c"} {
			t.Run(fmt.Sprintf("leased=%v/%s", leased, op), func(t *testing.T) {
				d, _ := zonetest.Open(t, dict.Options{})
				l, err := NewConn(d, "t", 2, math.MaxInt64, time.Second)
				if leased {
					l, err = NewLeasedConn(d, "t", 2, math.MaxInt64, time.Second, time.Minute)
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := l.Policy(); got.Limit != math.MaxInt64 {
					t.Errorf("Policy() = %+v, want Limit %d", got, int64(math.MaxInt64))
				}
				got, err := l.Incoming(context.Background(), "k", op == "c")
				if err != nil || !got.Allowed || got.Remaining != math.MaxInt64 {
					t.Errorf("Incoming(\"k\", %s) = %+v, %v; want allowed, Remaining %d", op, got, err, int64(math.MaxInt64))
				}
			})
		}
	}
}

// inFlight returns a Conn key's count: the stored int, or the live slots of
// a leased key.
func inFlight(t *testing.T, l *Conn, key string) int64 {
	t.Helper()
	if l.lease == nil {
		v, _, err := l.d.Get(zoneKey(l, key))
		if err != nil {
			t.Fatalf("Get(%q): %v", key, err)
		}
		return v.Int()
	}
	v, _, err := l.d.Get(zoneKey(l, key))
	if err != nil {
		return 0
	}
	_, total, _, _ := l.lease.scan(v.Bytes(), l.d.Now(), nil)
	return total
}

func TestConnLeavingAdjustsDelay(t *testing.T) {
	// The unit delay moves halfway to each latency: floor((old+latency)/2),
	// computed without the sum, which overflows near the longest Duration.
	tests := []struct {
		old, latency, want time.Duration
	}{
		{time.Second, 3 * time.Second, 2 * time.Second},
		{3, 4, 3},
		{3, 5, 4},
		{0, 1, 0},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64 - 1, math.MaxInt64, math.MaxInt64 - 1},
		{time.Second, math.MaxInt64, math.MaxInt64/2 + time.Second/2},
	}
	ctx := context.Background()
	for _, tt := range tests {
		d, _ := zonetest.Open(t, dict.Options{})
		l, _ := NewConn(d, "t", 1, 5, tt.old)
		l.Incoming(ctx, "foo", true)
		if _, err := l.Leaving(ctx, "foo", tt.latency); err != nil {
			t.Fatal(err)
		}
		if got := l.UnitDelay(); got != tt.want {
			t.Errorf("UnitDelay() from %d after Leaving(\"foo\", %d) = %d, want %d", tt.old, tt.latency, got, tt.want)
		}
	}
	d, _ := zonetest.Open(t, dict.Options{})
	l, _ := NewConn(d, "t", 1, 5, time.Second)
	if _, err := l.Leaving(ctx, "absent", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Leaving(absent) = %v, want ErrNotFound", err)
	}
}

// TestConnDelaySaturates: Delay, the unit delay times the max-sized groups
// ahead, saturates at the longest Duration instead of wrapping.
func TestConnDelaySaturates(t *testing.T) {
	tests := []struct {
		name     string
		unit     time.Duration
		inFlight int64 // stored before the dry run
		want     time.Duration
	}{
		{"fits", time.Hour, 2, 2 * time.Hour},
		{"3e6 hours", time.Hour, 3_000_000, math.MaxInt64},
		{"longest unit", math.MaxInt64, 1, math.MaxInt64},
		{"longest unit, one group", math.MaxInt64, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := zonetest.Open(t, dict.Options{})
			l, _ := NewConn(d, "t", 1, 1<<40, tt.unit)
			if _, err := d.Set(zoneKey(l, "k"), dict.Int(tt.inFlight), 0, 0); err != nil {
				t.Fatal(err)
			}
			got, err := l.Incoming(context.Background(), "k", false)
			if err != nil || !got.Allowed || got.Delay != tt.want {
				t.Errorf("Incoming(\"k\", dry) with %d in flight = %+v, %v; want allowed, Delay %d", tt.inFlight, got, err, tt.want)
			}
		})
	}
}
