package redistier

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
)

// rrCall is one call of a Redis leaky-bucket vector: at ms after t0, the
// reply [code, excess_m] of lua-resty-redis-ratelimit.
type rrCall struct {
	at     int64
	code   int
	excess int64
}

func every200(replies ...[2]int64) []rrCall {
	calls := make([]rrCall, len(replies))
	for i, r := range replies {
		calls[i] = rrCall{at: int64(i) * 200, code: int(r[0]), excess: r[1]}
	}
	return calls
}

// testReqVectors runs three vectors of lua-resty-redis-ratelimit's rules on
// c, all at 2 r/s. RR-1 and RR-2 send a request every 200 ms, with bursts
// of 0 and 2. RR-4 sends two requests to each of two keys, with a burst of
// 10.
func testReqVectors(t *testing.T, c redis.UniversalClient) {
	tests := []struct {
		name  string
		rate  string
		burst float64
		keys  []string // key of each call; nil = "k"
		calls []rrCall
		delay []time.Duration // checked when not nil
	}{
		{name: "RR-1", rate: "2r/s", burst: 0, calls: every200(
			[2]int64{1, 0}, [2]int64{2, 600}, [2]int64{2, 200}, [2]int64{1, 0},
			[2]int64{2, 600}, [2]int64{2, 200}, [2]int64{1, 0})},
		{name: "RR-2", rate: "2r/s", burst: 2, calls: every200(
			[2]int64{1, 0}, [2]int64{1, 600}, [2]int64{1, 1200}, [2]int64{1, 1800}, [2]int64{2, 2400},
			[2]int64{1, 2000}, [2]int64{2, 2600}, [2]int64{2, 2200}, [2]int64{1, 1800}, [2]int64{2, 2400})},
		{name: "RR-4", rate: "2r/s", burst: 10, keys: []string{"foo", "foo", "bar", "bar"},
			calls: []rrCall{{0, 1, 0}, {0, 1, 1000}, {0, 1, 0}, {0, 1, 1000}},
			delay: []time.Duration{0, 500 * time.Millisecond, 0, 500 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := new(testutil.Clock)
			l, err := NewReq(c, "rr-"+tt.name, tt.rate, tt.burst, 0, fake(clk))
			if err != nil {
				t.Fatal(err)
			}
			for i, call := range tt.calls {
				key := "k"
				if tt.keys != nil {
					key = tt.keys[i]
				}
				clk.Set(time.Duration(call.at) * time.Millisecond)
				d := incoming(t, l, key, true)
				code := 2
				if d.Allowed {
					code = 1
				}
				if got := int64(math.Round(d.State * 1000)); code != call.code || got != call.excess {
					t.Errorf("call %d at +%d ms: Incoming(%q) = [%d,%d], want [%d,%d]", i+1, call.at, key, code, got, call.code, call.excess)
				}
				if tt.delay != nil && d.Delay != tt.delay[i] {
					t.Errorf("call %d: Delay = %v, want %v", i+1, d.Delay, tt.delay[i])
				}
			}
		})
	}
}

// testReqResetAfter checks that ResetAfter is how long until the key is
// back to a fresh key's allowance. The script allows a request when
// max(stored − leak + 1000, 0) ≤ burst, so a stored excess E is back to
// burst+1 at once after (E+1000)/rate, when a dry run finds State 0 (and a
// millisecond before, it does not). A key made forbidden expires after its
// TTL and is then fresh: its ResetAfter is that TTL, as its RetryAfter.
func testReqResetAfter(t *testing.T, c redis.UniversalClient) {
	tests := []struct {
		name      string
		rate      string
		burst     float64
		duration  time.Duration
		calls     []int64 // commits, at ms after t0
		allowed   bool    // the last call's
		want      time.Duration
		forbidden bool // the key is forbidden after the last call: want is its TTL, less the time the calls took
	}{
		{"first/burst=0", "1r/s", 0, 0, []int64{0}, true, time.Second, false},
		{"tenth/burst=9", "10r/s", 9, 0, []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, true, time.Second, false},
		{"rejected/burst=0", "1r/s", 0, 0, []int64{0, 500}, false, 500 * time.Millisecond, false},
		{"rejected/burst=2", "2r/s", 2, 0, []int64{0, 200, 400, 600, 800}, false, 1200 * time.Millisecond, false},
		{"forbids", "1r/s", 0, 10 * time.Second, []int64{0, 500}, false, 10 * time.Second, true},
		{"forbidden", "1r/s", 0, 10 * time.Second, []int64{0, 500, 2000}, false, 10 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := new(testutil.Clock)
			l, err := NewReq(c, "reset-"+tt.name, tt.rate, tt.burst, tt.duration, fake(clk))
			if err != nil {
				t.Fatal(err)
			}
			var d limiter.Decision
			for _, at := range tt.calls {
				clk.Set(time.Duration(at) * time.Millisecond)
				d = incoming(t, l, "k", true)
			}
			last := tt.calls[len(tt.calls)-1]
			if tt.forbidden {
				// PTTL counts down on the server's clock while the test runs.
				if d.Allowed || d.ResetAfter != d.RetryAfter || d.ResetAfter > tt.want || d.ResetAfter < tt.want-time.Second {
					t.Errorf("Incoming(\"k\") at +%d = (allowed %v, RetryAfter %v, ResetAfter %v), want (allowed false, both the key's TTL, %v)",
						last, d.Allowed, d.RetryAfter, d.ResetAfter, tt.want)
				}
				return
			}
			if d.Allowed != tt.allowed || d.ResetAfter != tt.want {
				t.Fatalf("Incoming(\"k\") at +%d = (allowed %v, ResetAfter %v), want (allowed %v, ResetAfter %v)",
					last, d.Allowed, d.ResetAfter, tt.allowed, tt.want)
			}
			for _, at := range []int64{last + tt.want.Milliseconds() - 1, last + tt.want.Milliseconds()} {
				clk.Set(time.Duration(at) * time.Millisecond)
				dry := incoming(t, l, "k", false)
				if fresh := at == last+tt.want.Milliseconds(); (dry.State == 0) != fresh {
					t.Errorf("Incoming(\"k\", dry) at +%d = (State %v, Remaining %d), want fresh %v (State 0)",
						at, dry.State, dry.Remaining, fresh)
				}
			}
		})
	}
}

// testReqTTL checks the TTL an allowed request gives its key: 60 s, as
// the Lua module's, or, when the bucket takes longer to drain, the time
// until the next request finds the key as if new, (excess+1000)/rate
// seconds rounded up. The module's 60 s made a bucket of "10r/m" and burst
// 20, filled by 21 requests, start full again after 60 s, where it drains
// in 126.5 s.
func testReqTTL(t *testing.T, c redis.UniversalClient) {
	tests := []struct {
		name  string
		rate  string
		burst float64
		calls int           // commits at t0
		want  time.Duration // the key's TTL after them
	}{
		{"fast", "2r/s", 10, 11, 60 * time.Second},        // (10000+1000)/2000 = 5.5 s
		{"slow-first", "1r/m", 0, 1, 63 * time.Second},    // (0+1000)/16 = 62.5 s
		{"slow-full", "10r/m", 20, 21, 127 * time.Second}, // (20000+1000)/166 = 126.5 s
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := new(testutil.Clock)
			l, err := NewReq(c, "ttl-"+tt.name, tt.rate, tt.burst, 0, fake(clk))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tt.calls; i++ {
				if d := incoming(t, l, "k", true); !d.Allowed {
					t.Fatalf("call %d of %d at t0 rejected: %+v", i+1, tt.calls, d)
				}
			}
			// PTTL counts down on the server's clock while the test runs.
			ttl, err := c.PTTL(ctx, "ttl-"+tt.name+":k").Result()
			if err != nil || ttl > tt.want || ttl < tt.want-5*time.Second {
				t.Errorf("PTTL after %d calls = %v, %v; want %v (less the test's time)", tt.calls, ttl, err, tt.want)
			}
		})
	}
}

// gcCall is one call of a GCRA vector.
type gcCall struct {
	at        time.Duration
	n         int64
	allowed   bool
	remaining int64
	retry     time.Duration // checked when rejected
	reset     time.Duration // checked when allowed
}

// testGCRAVectors runs the vectors GC-1, GC-4 and GC-5 of
// limiter/spec_gcra_test.go on c.
func testGCRAVectors(t *testing.T, c redis.UniversalClient) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		rate  float64
		burst int64
		calls []gcCall
	}{
		{"GC-1", 10, 10, []gcCall{
			{0, 1, true, 9, 0, 100 * ms}, {0, 2, true, 7, 0, 300 * ms}, {0, 7, true, 0, 0, time.Second},
			{0, 1000, false, 0, -1, 0}, {500 * ms, 1, true, 4, 0, 600 * ms}}},
		{"GC-4", 0.1, 1, []gcCall{
			{0, 1, true, 0, 0, 10 * time.Second}, {200 * ms, 1, false, 0, 9800 * ms, 0},
			{10 * time.Second, 1, true, 0, 0, 10 * time.Second}}},
		{"GC-5", 1, 3, []gcCall{
			{0, 1, true, 2, 0, 0}, {0, 1, true, 1, 0, 0}, {0, 1, true, 0, 0, 0}, {0, 1, false, 0, time.Second, 0},
			{500 * ms, 1, false, 0, 500 * ms, 0}, {time.Second, 1, true, 0, 0, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := new(testutil.Clock)
			l, err := NewGCRA(c, "gc-"+tt.name, tt.rate, tt.burst, fake(clk))
			if err != nil {
				t.Fatal(err)
			}
			for i, call := range tt.calls {
				clk.Set(call.at)
				d, err := l.IncomingN(context.Background(), "k", call.n, true)
				if err != nil {
					t.Fatalf("call %d: IncomingN(%d): %v", i+1, call.n, err)
				}
				if d.Allowed != call.allowed || (d.Allowed && d.Remaining != call.remaining) {
					t.Errorf("call %d at +%v: IncomingN(%d) = allowed %v remaining %d, want %v %d", i+1, call.at, call.n, d.Allowed, d.Remaining, call.allowed, call.remaining)
				}
				if !d.Allowed && call.retry >= 0 && d.RetryAfter != call.retry {
					t.Errorf("call %d: RetryAfter = %v, want %v", i+1, d.RetryAfter, call.retry)
				}
				if d.Allowed && call.reset > 0 && d.ResetAfter != call.reset {
					t.Errorf("call %d: ResetAfter = %v, want %v", i+1, d.ResetAfter, call.reset)
				}
			}
		})
	}
}

// TestGCRALongWaits: AllowN of more requests than the burst is rejected
// with RetryAfter how long until n would be allowed, (n·T − τ) µs,
// saturating at the longest Duration. The script caps its reply at 9e18 µs:
// beyond 2^63 Redis converts it to LLONG_MIN, a rejection that said "retry
// now".
func TestGCRALongWaits(t *testing.T) {
	_, c := newClient(t)
	clk := new(testutil.Clock)
	l, err := NewGCRA(c, "long", 10, 10, fake(clk)) // T = 1e5 µs, τ = 1e6 µs
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		n    int64
		want time.Duration
	}{
		{11, 100 * time.Millisecond},
		{1e9, (1e14 - 1e6) * time.Microsecond},
		{1e12, math.MaxInt64}, // 1e17 µs: beyond a Duration in ns
		{1e14, math.MaxInt64}, // 1e19 µs: beyond Redis's integers
		{1 << 62, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64},
	} {
		d, err := l.IncomingN(context.Background(), "k", tt.n, true)
		if err != nil || d.Allowed || d.RetryAfter != tt.want {
			t.Errorf("IncomingN(\"k\", %d) = (allowed %v, RetryAfter %d), %v; want (false, %d)", tt.n, d.Allowed, d.RetryAfter, err, tt.want)
		}
	}
}

// testCount checks the fixed window: limit per window, rejected commits
// counted, dry runs not, Uncommit, and the window's end.
func testCount(t *testing.T, c redis.UniversalClient) {
	l, err := NewCount(c, "count", 3, 200*time.Millisecond, Options{Timeout: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, true, true, false}
	for i, w := range want {
		if d := incoming(t, l, "k", true); d.Allowed != w || (w && d.Remaining != int64(2-i)) {
			t.Fatalf("call %d: Incoming = %+v, want allowed %v remaining %d", i+1, d, w, 2-i)
		}
	}
	if d := incoming(t, l, "k", false); d.Allowed || d.State != -2 || d.RetryAfter <= 0 || d.RetryAfter > 200*time.Millisecond {
		t.Fatalf("dry run past the limit = %+v, want rejected, State -2, RetryAfter in (0, 200ms]", d)
	}
	for i := 0; i < 2; i++ {
		if err := l.Uncommit(context.Background(), "k"); err != nil {
			t.Fatal(err)
		}
	}
	if d := incoming(t, l, "k", true); !d.Allowed {
		t.Fatalf("after two Uncommits: Incoming = %+v, want allowed", d)
	}
	// The window ends when Redis expires the key, on its own clock: wait
	// until a dry run sees a fresh window.
	for deadline := time.Now().Add(faultHang); ; time.Sleep(10 * time.Millisecond) {
		if d := incoming(t, l, "k", false); d.Allowed && d.Remaining == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the 200 ms window still open after %v", faultHang)
		}
	}
	if d := incoming(t, l, "k", true); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("next window: Incoming = %+v, want allowed remaining 2", d)
	}
}

// testSliding checks the sliding window's estimate with the caller clock,
// against limiter.SlidingWindow's arithmetic.
func testSliding(t *testing.T, c redis.UniversalClient) {
	clk := new(testutil.Clock)
	clk.Set(-time.Duration(t0.UnixMilli()%1000) * time.Millisecond) // at a window's start
	base := clk.Now().Sub(t0)
	l, err := NewSlidingWindow(c, "sw", 10, time.Second, fake(clk))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if d := incoming(t, l, "k", true); !d.Allowed || d.Remaining != int64(9-i) {
			t.Fatalf("call %d: %+v, want allowed remaining %d", i+1, d, 9-i)
		}
	}
	if d := incoming(t, l, "k", true); d.Allowed || d.RetryAfter != time.Second+100*time.Millisecond {
		t.Fatalf("11th call: %+v, want rejected, RetryAfter 1.1s", d)
	}
	// At 1.5 s the previous window weighs half: 10·0.5 = 5 counted, 5 left.
	clk.Set(base + 1500*time.Millisecond)
	for i := 0; i < 5; i++ {
		if d := incoming(t, l, "k", true); !d.Allowed {
			t.Fatalf("at 1.5 s call %d rejected: %+v", i+1, d)
		}
	}
	d := incoming(t, l, "k", true)
	if d.Allowed {
		t.Fatalf("at 1.5 s the 6th call was allowed: %+v", d)
	}
	if err := l.Uncommit(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	if d := incoming(t, l, "k", false); !d.Allowed {
		t.Fatalf("after Uncommit: dry run = %+v, want allowed", d)
	}
}

// suite runs every limiter's tests on c.
func suite(t *testing.T, c redis.UniversalClient) {
	t.Run("Req", func(t *testing.T) { testReqVectors(t, c) })
	t.Run("ReqResetAfter", func(t *testing.T) { testReqResetAfter(t, c) })
	t.Run("ReqTTL", func(t *testing.T) { testReqTTL(t, c) })
	t.Run("GCRA", func(t *testing.T) { testGCRAVectors(t, c) })
	t.Run("Count", func(t *testing.T) { testCount(t, c) })
	t.Run("SlidingWindow", func(t *testing.T) { testSliding(t, c) })
	t.Run("ServerClock", func(t *testing.T) { testServerClock(t, c) })
}

func TestSpecStandalone(t *testing.T) {
	_, c := newClient(t)
	suite(t, c)
}

// testServerClock checks the limiters on Redis's TIME: GCRA-1's first
// results, and Req's delays, whatever the caller's clock says. The rates
// are slow, and the server's time between the calls is at most the span
// the test measures around them (plus a millisecond: Req reads TIME in
// whole ones), so every result is known up to that span however loaded
// the machine.
func testServerClock(t *testing.T, c redis.UniversalClient) {
	// Ignored under ServerClock; a caller clock that jumps an hour a call
	// would refill the buckets between calls.
	var hours atomic.Int64
	wrong := func() time.Time { return time.Unix(0, 0).Add(time.Duration(hours.Add(1)) * time.Hour) }
	ctx := context.Background()
	const T = 1000 * time.Second // GCRA's emission interval: 0.001 r/s
	g, err := NewGCRA(c, "srv-gcra", 0.001, 10, Options{Clock: ServerClock, Now: wrong, Timeout: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := g.IncomingN(ctx, "k", 1, true)
	if err != nil || !d.Allowed || d.Remaining != 9 || d.ResetAfter != T {
		t.Fatalf("GCRA on TIME: IncomingN(1) = %+v, %v; want allowed, remaining 9, reset %v", d, err, T)
	}
	d, err = g.IncomingN(ctx, "k", 9, true)
	span := time.Since(start) + time.Millisecond
	if err != nil || !d.Allowed || d.Remaining != 0 || d.ResetAfter < 10*T-span || d.ResetAfter > 10*T {
		t.Fatalf("GCRA on TIME: IncomingN(9) %v after the first = %+v, %v; want allowed, remaining 0, reset in [%v, %v]", span, d, err, 10*T-span, 10*T)
	}
	d, err = g.IncomingN(ctx, "k", 1, true)
	span = time.Since(start) + time.Millisecond
	if err != nil || d.Allowed || d.RetryAfter < T-span || d.RetryAfter > T {
		t.Fatalf("GCRA on TIME: 11th %v after the first = %+v, %v; want rejected, retry in [%v, %v]", span, d, err, T-span, T)
	}
	r, err := NewReq(c, "srv-req", "6r/m", 10, 0, Options{Clock: ServerClock, Now: wrong, Timeout: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	incoming(t, r, "k", true)
	d = incoming(t, r, "k", true)
	span = time.Since(start) + time.Millisecond
	// The excess is kept in whole milli-requests: 10 ms of delay at 0.1 r/s.
	if least := 10*time.Second - span - 10*time.Millisecond; !d.Allowed || d.Delay < least || d.Delay > 10*time.Second {
		t.Fatalf("Req on TIME: second call %v after the first = %+v, want delay in [%v, 10s]", span, d, least)
	}
	s, err := NewSlidingWindow(c, "srv-sw", 2, time.Minute, Options{Timeout: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(incoming(t, s, "k", true).Allowed, incoming(t, s, "k", true).Allowed, incoming(t, s, "k", true).Allowed)
	if got != "true true false" {
		t.Fatalf("SlidingWindow on TIME, limit 2: allowed %s, want true true false", got)
	}
}
