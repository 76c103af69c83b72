package redistier

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/leak"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
)

// hostile is one of issue 15's values as Redis holds it: a string, or a
// key of another type.
type hostile struct {
	name string
	s    string // the string, for the values that are one
	put  func(ctx context.Context, c redis.UniversalClient, key string) error
}

// hostiles returns 1e308, 9.3e18, 5e15, NaN, inf, a string, an array (a
// list), a hash, null and a boolean.
func hostiles() []hostile {
	str := func(name, s string) hostile {
		return hostile{name, s, func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, s, 0).Err()
		}}
	}
	return []hostile{
		str("1e308", "1e308"),
		str("9.3e18", "9.3e18"),
		str("5e15", "5e15"),
		str("NaN", "nan"),
		str("inf", "inf"),
		str("string", "abc"),
		{"array", "", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.RPush(ctx, key, 1, 2, 3).Err()
		}},
		{"hash", "", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.HSet(ctx, key, "a", "1").Err()
		}},
		str("null", "null"),
		str("boolean", "true"),
	}
}

// jsonOf returns a hostile value as a JSON element: the string values as
// they are (cjson reads nan and inf) but for the word string, quoted.
func jsonOf(h hostile) string {
	switch h.name {
	case "string":
		return `"abc"`
	case "array":
		return "[1,2,3]"
	case "hash":
		return `{"a":1}`
	}
	return h.s
}

// badCase is a key's state that a limiter cannot have written, put under
// key, and the call that must fail on it.
type badCase struct {
	name string
	put  func(ctx context.Context, c redis.UniversalClient, key string) error
}

// TestBadState puts, under the key of each Redis limiter, each hostile
// value: as the whole value, and as each field of the limiter's own shape
// (Req's JSON elements, SlidingWindow's hash fields). Every decision,
// dry run and Uncommit on it must return ErrBadState: not ErrUnavailable,
// and not a decision, although the limiters fail open; and the value
// must stay as it was.
func TestBadState(t *testing.T) {
	_, c := newClient(t)
	ctx := context.Background()
	clk := new(testutil.Clock)
	o := fake(clk)
	o.OnFailure = FailOpen
	now := clk.Now().UnixMilli()
	req, err := NewReq(c, "req", "1r/s", 2e7, time.Minute, o)
	if err != nil {
		t.Fatal(err)
	}
	count, _ := NewCount(c, "count", 10, time.Minute, o)
	sw, _ := NewSlidingWindow(c, "sw", 10, time.Minute, o)
	gcra, _ := NewGCRA(c, "gcra", 10, 10, o)
	type limiterCase struct {
		name string
		l    interface {
			limiter.Limiter
			Stats() Stats
		}
		prefix string
		cases  []badCase
	}
	whole := func() []badCase {
		var cs []badCase
		for _, h := range hostiles() {
			cs = append(cs, badCase{h.name, h.put})
		}
		return cs
	}
	reqCases := whole()
	for _, h := range hostiles() {
		for i, field := range []string{"excess", "last", "forbidden"} {
			elems := []string{"1000", strconv.FormatInt(now, 10), "0"}
			elems[i] = jsonOf(h)
			v := "[" + elems[0] + "," + elems[1] + "," + elems[2] + "]"
			reqCases = append(reqCases, badCase{field + " " + h.name, func(ctx context.Context, c redis.UniversalClient, key string) error {
				return c.Set(ctx, key, v, time.Minute).Err()
			}})
		}
	}
	reqCases = append(reqCases,
		badCase{"short array", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, "[5,1]", time.Minute).Err()
		}},
		badCase{"forbidden without TTL", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, fmt.Sprintf("[1000,%d,1]", now), 0).Err()
		}},
		badCase{"last a day ahead", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, fmt.Sprintf("[1000,%d,0]", now+2*maxAheadMs), time.Minute).Err()
		}},
		badCase{"excess -5", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, fmt.Sprintf("[-5,%d,0]", now), time.Minute).Err()
		}},
		badCase{"last -1", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, "[1000,-1,0]", time.Minute).Err()
		}},
		badCase{"forbidden -1", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, fmt.Sprintf("[1000,%d,-1]", now), time.Minute).Err()
		}},
	)
	swCases := whole()
	idx := strconv.FormatInt(now/time.Minute.Milliseconds(), 10)
	for _, h := range hostiles() {
		if h.s == "" {
			continue
		}
		for i, field := range []string{"i", "c", "p"} {
			vals := []string{idx, "1", "1"}
			vals[i] = h.s
			swCases = append(swCases, badCase{field + " " + h.name, func(ctx context.Context, c redis.UniversalClient, key string) error {
				return c.HSet(ctx, key, "i", vals[0], "c", vals[1], "p", vals[2]).Err()
			}})
		}
	}
	swCases = append(swCases,
		badCase{"negative count", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.HSet(ctx, key, "i", idx, "c", "-5", "p", "0").Err()
		}},
		badCase{"missing field", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.HSet(ctx, key, "i", idx, "c", "1").Err()
		}},
		badCase{"negative previous count", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.HSet(ctx, key, "i", idx, "c", "0", "p", "-5").Err()
		}},
		badCase{"negative window", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.HSet(ctx, key, "i", "-1", "c", "1", "p", "0").Err()
		}},
	)
	countCases := append(whole(),
		badCase{"count 2^53+1", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, "9007199254740993", time.Minute).Err()
		}},
		badCase{"count -5", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, "-5", time.Minute).Err()
		}},
		badCase{"count -1", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, "-1", time.Minute).Err()
		}},
		badCase{"count -0", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, "-0", time.Minute).Err()
		}},
	)
	gcraCases := append(whole(),
		badCase{"TAT -1", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, "-1", time.Minute).Err()
		}},
		badCase{"TAT 101 years ahead", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.Set(ctx, key, strconv.FormatInt(now*1000+maxTauUs+int64(time.Hour/time.Microsecond), 10), time.Minute).Err()
		}},
	)
	limiters := []limiterCase{
		{"Req", req, "req", reqCases},
		{"Count", count, "count", countCases},
		{"SlidingWindow", sw, "sw", swCases},
		{"GCRA", gcra, "gcra", gcraCases},
	}
	calls := []struct {
		name string
		fn   func(l limiter.Limiter, key string) (limiter.Decision, error)
	}{
		{"commit", func(l limiter.Limiter, key string) (limiter.Decision, error) { return l.Incoming(ctx, key, true) }},
		{"dry", func(l limiter.Limiter, key string) (limiter.Decision, error) { return l.Incoming(ctx, key, false) }},
		{"uncommit", func(l limiter.Limiter, key string) (limiter.Decision, error) {
			return limiter.Decision{}, l.Uncommit(ctx, key)
		}},
	}
	n := 0
	for _, lc := range limiters {
		for _, bc := range lc.cases {
			for _, call := range calls {
				n++
				key := "k" + strconv.Itoa(n)
				t.Run(lc.name+"/"+bc.name+"/"+call.name, func(t *testing.T) {
					rk := lc.prefix + ":" + key
					if err := bc.put(ctx, c, rk); err != nil {
						t.Fatal(err)
					}
					before := snapshot(t, c, rk)
					fallbacks := lc.l.Stats().Fallbacks
					dec, err := call.fn(lc.l, key)
					if !errors.Is(err, ErrBadState) || errors.Is(err, ErrUnavailable) || dec != (limiter.Decision{}) {
						t.Fatalf("= %+v, %v; want ErrBadState, not ErrUnavailable, and no decision", dec, err)
					}
					if lc.l.Stats().Fallbacks != fallbacks {
						t.Errorf("the failure policy answered a bad state")
					}
					if after := snapshot(t, c, rk); after != before {
						t.Errorf("value afterwards %q, want it unchanged: %q", after, before)
					}
				})
			}
		}
	}
}

// snapshot returns a key's value, serialized, and whether it has a TTL.
func snapshot(t *testing.T, c redis.UniversalClient, key string) string {
	t.Helper()
	ctx := context.Background()
	v, err := c.Dump(ctx, key).Result()
	if err != nil {
		t.Fatalf("DUMP %s: %v", key, err)
	}
	ttl, err := c.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return fmt.Sprintf("%q ttl=%v", v, ttl > 0)
}

// TestGoodStateDecided gives the Redis limiters states they can have
// written with extreme contents: they decide, and durations saturate
// instead of overflowing; an excess of 1e10 milli-requests at 1 r/s and
// burst 2e7 waits (1e10+1000)/1000 s, as lua-resty-redis-ratelimit's
// excess / rate.
func TestGoodStateDecided(t *testing.T) {
	_, c := newClient(t)
	ctx := context.Background()
	clk := new(testutil.Clock)
	o := fake(clk)
	now := clk.Now().UnixMilli()
	req, err := NewReq(c, "req", "1r/s", 2e7, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, "req:k", fmt.Sprintf("[1e10,%d,0]", now), time.Minute)
	d := incoming(t, req, "k", true)
	if !d.Allowed || d.Delay != 10_000_001*time.Second || d.ResetAfter != d.Delay+time.Second || d.State != 10_000_001 {
		t.Errorf("Req on an excess of 1e10 = %+v, want allowed with a delay of 10,000,001 s, reset in 10,000,002 s", d)
	}
	// The largest excess a Req stores, at 1 r/m: far beyond a
	// Duration in ns if it did not saturate.
	slow, err := NewReq(c, "slow", "1r/m", 1e12-1, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, "slow:k", fmt.Sprintf("[%d,%d,0]", int64(maxExcessM), now), time.Minute)
	if d := incoming(t, slow, "k", false); d.Allowed || d.RetryAfter <= 0 || d.ResetAfter != math.MaxInt64 {
		t.Errorf("Req on the largest excess at 1 r/m = %+v, want rejected, ResetAfter saturated", d)
	}
	count, _ := NewCount(c, "count", 10, time.Minute, o)
	c.Set(ctx, "count:k", "5000000000000000", 0)
	if d := incoming(t, count, "k", true); d.Allowed || d.RetryAfter != time.Minute || d.State != 10-5e15-1 {
		t.Errorf("Count over 5e15 = %+v, want rejected until the window it opens ends", d)
	}
	gcra, _ := NewGCRA(c, "gcra", 10, 10, o)
	year := int64(365 * 24 * time.Hour / time.Microsecond)
	c.Set(ctx, "gcra:k", strconv.FormatInt(now*1000+50*year, 10), time.Hour)
	if d := incoming(t, gcra, "k", true); d.Allowed || d.RetryAfter < 49*365*24*time.Hour || d.ResetAfter < d.RetryAfter {
		t.Errorf("GCRA on a TAT 50 years ahead = %+v, want rejected for about 50 years", d)
	}
}

// TestDurations checks the saturating conversions of script replies.
func TestDurations(t *testing.T) {
	for _, tt := range []struct {
		excess, rateM int64
		want          time.Duration
	}{
		{10_000_001_000, 1000, 10_000_001 * time.Second},
		{1, 3, 333_333_333},
		{0, 1000, 0},
		{-5, 1000, 0},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64, time.Second},
		{9_300_000_000, 1, math.MaxInt64},
	} {
		if got := leak.Time(float64(tt.excess), float64(tt.rateM)); got != tt.want {
			t.Errorf("leakTime(%d) at %d milli-requests/s = %d, want %d", tt.excess, tt.rateM, got, tt.want)
		}
	}
	for _, tt := range []struct {
		n    int64
		unit time.Duration
		want time.Duration
	}{
		{5, time.Millisecond, 5 * time.Millisecond},
		{-1, time.Millisecond, 0},
		{math.MinInt64, time.Microsecond, 0},
		{math.MaxInt64 / 1000, time.Microsecond, math.MaxInt64 / 1000 * 1000},
		{math.MaxInt64/1000 + 1, time.Microsecond, math.MaxInt64},
		{9e18, time.Microsecond, math.MaxInt64}, // gcraScript's cap
	} {
		if got := span(tt.n, tt.unit); got != tt.want {
			t.Errorf("span(%d, %v) = %d, want %d", tt.n, tt.unit, got, tt.want)
		}
	}
}

// TestTieredBadState puts each hostile value in a Tiered key's Redis hash
// (as another host's count) or as the key itself: the flush of that key
// returns ErrBadState, not ErrUnavailable, and leaves the value; the key's
// decisions return ErrBadState while the other keys decide as usual, also
// past the time after which a host without a good flush calls Redis
// failed, and no decision is left to the failure policy (FailOpen). Once
// the value is gone, the key decides again.
func TestTieredBadState(t *testing.T) {
	_, c := newClient(t)
	ctx := context.Background()
	d, clk := zonetest.Open(t, dict.Options{})
	const interval = 100 * time.Millisecond
	window := time.Hour // the test's clock stays in one window past the staleness limit
	o := Options{Timeout: callTimeout, OnFailure: FailOpen, Now: clk.Now}
	var cases []badCase
	for _, h := range hostiles() {
		cases = append(cases, badCase{"key " + h.name, h.put})
		if h.s != "" {
			s := h.s
			cases = append(cases, badCase{"count " + h.name, func(ctx context.Context, c redis.UniversalClient, key string) error {
				return c.HSet(ctx, key, "99", s, "99:s", "1").Err()
			}})
		}
	}
	cases = append(cases,
		badCase{"count 2^53+1", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.HSet(ctx, key, "99", "9007199254740993").Err()
		}},
		badCase{"count -5", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.HSet(ctx, key, "99", "-5", "99:s", "1").Err()
		}},
		badCase{"sequence 0", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.HSet(ctx, key, "99", "5", "99:s", "0").Err()
		}},
		badCase{"sequence -1", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.HSet(ctx, key, "99", "5", "99:s", "-1").Err()
		}},
		badCase{"reset 0", func(ctx context.Context, c redis.UniversalClient, key string) error {
			return c.HSet(ctx, key, "reset", "0").Err()
		}},
	)
	for i, bc := range cases {
		t.Run(bc.name, func(t *testing.T) {
			clk.Set(0)
			l, err := NewTiered(d, c, "tb"+strconv.Itoa(i), 100, window, interval, o)
			if err != nil {
				t.Fatal(err)
			}
			win := clk.Now().UnixMilli() / window.Milliseconds()
			rk := fmt.Sprintf("tb%d:k:%d", i, win)
			for _, k := range []string{"k", "other"} {
				if dec, err := l.Incoming(ctx, k, true); err != nil || !dec.Allowed {
					t.Fatalf("Incoming(%s) before = %+v, %v", k, dec, err)
				}
			}
			if err := bc.put(ctx, c, rk); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, c, rk)
			// Past the staleness limit (5 intervals plus the timeout), with a
			// flush every interval for 6 intervals, then one past the limit.
			limit := 5*interval + o.Timeout
			for step := time.Duration(0); step <= limit+interval; step += interval {
				if step == 7*interval {
					step = limit + interval
				}
				clk.Set(step)
				if _, err := l.Flush(ctx); !errors.Is(err, ErrBadState) || errors.Is(err, ErrUnavailable) {
					t.Fatalf("Flush at %v = %v, want ErrBadState and not ErrUnavailable", step, err)
				}
				dec, err := l.Incoming(ctx, "k", true)
				if !errors.Is(err, ErrBadState) || dec != (limiter.Decision{}) {
					t.Fatalf("Incoming(k) at %v = %+v, %v; want ErrBadState and no decision", step, dec, err)
				}
				if dec, err := l.Incoming(ctx, "other", true); err != nil || !dec.Allowed || !dec.Committed {
					t.Fatalf("Incoming(other) at %v = %+v, %v; want counted as usual", step, dec, err)
				}
			}
			if l.Stats().Fallbacks != 0 {
				t.Errorf("%d decisions left to the failure policy", l.Stats().Fallbacks)
			}
			if after := snapshot(t, c, rk); after != before {
				t.Errorf("value afterwards %q, want it unchanged: %q", after, before)
			}
			c.Del(ctx, rk)
			if _, err := l.Flush(ctx); err != nil {
				t.Fatalf("Flush once the value is gone: %v", err)
			}
			if dec, err := l.Incoming(ctx, "k", true); err != nil || !dec.Allowed {
				t.Errorf("Incoming(k) once the value is gone = %+v, %v", dec, err)
			}
		})
	}
}

// TestUncommitKeepsGoodState gives back more requests than a window holds,
// on Count and on Tiered: the count stops at 0, a state the limiters read
// back, and the next decision counts from 0.
func TestUncommitKeepsGoodState(t *testing.T) {
	_, c := newClient(t)
	ctx := context.Background()
	clk := new(testutil.Clock)

	count, _ := NewCount(c, "count", 10, time.Minute, fake(clk))
	incoming(t, count, "k", true)
	if err := count.UncommitN(ctx, "k", 3); err != nil {
		t.Fatalf("Count: UncommitN(3) after one request = %v", err)
	}
	if v, err := c.Get(ctx, "count:k").Result(); err != nil || v != "0" {
		t.Errorf("Count: value after UncommitN(3) = %q, %v; want \"0\"", v, err)
	}
	if d := incoming(t, count, "k", true); !d.Allowed || d.Remaining != 9 {
		t.Errorf("Count: Incoming after UncommitN(3) = %+v, want allowed with 9 left", d)
	}

	d, zclk := zonetest.Open(t, dict.Options{})
	window := time.Minute
	l, err := NewTiered(d, c, "tu", 10, window, 100*time.Millisecond, Options{Timeout: callTimeout, Now: zclk.Now})
	if err != nil {
		t.Fatal(err)
	}
	incoming(t, l, "k", true)
	for range 3 {
		if err := l.Uncommit(ctx, "k"); err != nil {
			t.Fatalf("Tiered: Uncommit = %v", err)
		}
	}
	if _, err := l.Flush(ctx); err != nil {
		t.Fatalf("Tiered: Flush after 3 Uncommits = %v", err)
	}
	rk := fmt.Sprintf("tu:k:%d", zclk.Now().UnixMilli()/window.Milliseconds())
	h, err := c.HGetAll(ctx, rk).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(h) == 0 {
		t.Errorf("Tiered: %s is empty after a flush, want the host's count", rk)
	}
	for f, v := range h {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
			t.Errorf("Tiered: field %s of %s = %q, want an integer of at least 0", f, rk, v)
		}
	}
	if d := incoming(t, l, "k", true); !d.Allowed || d.Remaining != 9 {
		t.Errorf("Tiered: Incoming after 3 Uncommits = %+v, want allowed with 9 left", d)
	}
}
