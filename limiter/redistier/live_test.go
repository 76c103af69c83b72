package redistier

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
)

// liveLimiter is what the live tests drive of a Redis limiter.
type liveLimiter interface {
	limiter.Limiter
	UnsetLive(context.Context) error
	Setting(context.Context) (Setting, error)
}

// liveKinds builds a limiter of each kind under prefix. A fresh key admits
// built requests at one instant, and raised once raise has run.
var liveKinds = []struct {
	name          string
	build         func(c redis.UniversalClient, prefix string, o Options) (liveLimiter, error)
	raise         func(l liveLimiter) error
	built, raised int
}{
	{"req", func(c redis.UniversalClient, p string, o Options) (liveLimiter, error) {
		return NewReq(c, p, "1r/s", 1, 0, o)
	}, func(l liveLimiter) error { return l.(*Req).SetBurst(context.Background(), 4) }, 2, 5},
	{"count", func(c redis.UniversalClient, p string, o Options) (liveLimiter, error) {
		return NewCount(c, p, 2, time.Hour, o)
	}, func(l liveLimiter) error { return l.(*Count).SetLimit(context.Background(), 5) }, 2, 5},
	{"sliding", func(c redis.UniversalClient, p string, o Options) (liveLimiter, error) {
		return NewSlidingWindow(c, p, 2, time.Minute, o)
	}, func(l liveLimiter) error { return l.(*SlidingWindow).SetLimit(context.Background(), 5) }, 2, 5},
	{"gcra", func(c redis.UniversalClient, p string, o Options) (liveLimiter, error) {
		return NewGCRA(c, p, 1, 2, o)
	}, func(l liveLimiter) error { return l.(*GCRA).SetBurst(context.Background(), 5) }, 2, 5},
}

// cachedClient is a client whose type the limiters do not know, so that
// their scripts do not read the live hash: the mode of a cluster client
// with a prefix without hash tag, on one node.
type cachedClient struct{ *redis.Client }

// hostClient returns another client of r: another host's.
func hostClient(t *testing.T, r *testutil.Redis, cached bool) redis.UniversalClient {
	c := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	if cached {
		return cachedClient{c}
	}
	return c
}

// fill commits requests on key until a dry run is rejected, and returns
// how many it committed.
func fill(t *testing.T, l limiter.Limiter, key string) int {
	t.Helper()
	for i := 0; i < 100; i++ {
		if !incoming(t, l, key, false).Allowed {
			return i
		}
		if d := incoming(t, l, key, true); !d.Allowed {
			t.Fatalf("Incoming(%q, true) after an allowed dry run = %+v", key, d)
		}
	}
	t.Fatalf("%q admits 100 requests at one instant", key)
	return 0
}

// TestLiveSeenByOtherHost: a live change made by one host is in force at
// another's next decision, on a fresh key and on an open one. UnsetLive
// brings the built numbers back. When the script cannot read the hash,
// the other host sees the change once its clock has moved by LiveEvery.
func TestLiveSeenByOtherHost(t *testing.T) {
	r, _ := newClient(t)
	for _, cached := range []bool{false, true} {
		for _, k := range liveKinds {
			t.Run(fmt.Sprintf("%s/cached=%v", k.name, cached), func(t *testing.T) {
				clk := new(testutil.Clock)
				o := fake(clk)
				o.LiveEvery = time.Nanosecond
				p := fmt.Sprintf("live-%s-%v", k.name, cached)
				a, err := k.build(hostClient(t, r, cached), p, o)
				if err != nil {
					t.Fatal(err)
				}
				b, err := k.build(hostClient(t, r, cached), p, o)
				if err != nil {
					t.Fatal(err)
				}
				step := func() { clk.Advance(time.Nanosecond) } // LiveEvery, within the ms and µs the scripts see
				if got := fill(t, b, "open"); got != k.built {
					t.Fatalf("built: admitted %d, want %d", got, k.built)
				}
				if err := k.raise(a); err != nil {
					t.Fatalf("raise: %v", err)
				}
				step()
				if got := fill(t, b, "open"); got != k.raised-k.built {
					t.Errorf("open key after the raise: admitted %d more, want %d", got, k.raised-k.built)
				}
				if got := fill(t, b, "fresh"); got != k.raised {
					t.Errorf("fresh key after the raise: admitted %d, want %d", got, k.raised)
				}
				if err := a.UnsetLive(context.Background()); err != nil {
					t.Fatal(err)
				}
				step()
				if got := fill(t, b, "after-unset"); got != k.built {
					t.Errorf("after UnsetLive: admitted %d, want %d", got, k.built)
				}
			})
		}
	}
}

// TestLiveCachedStaleness: a limiter whose script cannot read the hash
// uses the numbers it read until its clock has moved by LiveEvery. Its
// own change is in force at once.
func TestLiveCachedStaleness(t *testing.T) {
	r, _ := newClient(t)
	clk := new(testutil.Clock)
	o := fake(clk)
	o.LiveEvery = time.Hour
	a, err := NewCount(hostClient(t, r, true), "stale", 2, time.Hour, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewCount(hostClient(t, r, true), "stale", 2, time.Hour, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := fill(t, b, "k1"); got != 2 {
		t.Fatalf("built: admitted %d, want 2", got)
	}
	if err := a.SetLimit(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	if got := fill(t, a, "k2"); got != 5 {
		t.Errorf("the setter's limiter admitted %d, want 5", got)
	}
	if got := fill(t, b, "k3"); got != 2 {
		t.Errorf("within LiveEvery: admitted %d, want the 2 it read before", got)
	}
	clk.Advance(time.Hour)
	if got := fill(t, b, "k4"); got != 5 {
		t.Errorf("after LiveEvery: admitted %d, want 5", got)
	}
}

// TestLiveCountOpenWindow: a Count's limit changed live applies to the
// open window at once, raised or lowered, as the zone's Count. A window
// open at a change of the window keeps its end; the next lasts the new
// window.
func TestLiveCountOpenWindow(t *testing.T) {
	_, c := newClient(t)
	ctx := context.Background()
	l, err := NewCount(c, "cw", 5, time.Hour, Options{Timeout: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		incoming(t, l, "k", true)
	}
	if err := l.SetLimit(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if d := incoming(t, l, "k", false); d.Allowed || d.State != -2 {
		t.Errorf("lowered to 2 after 3: %+v, want a rejection with State -2", d)
	}
	if err := l.SetLimit(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if d := incoming(t, l, "k", true); !d.Allowed || d.Remaining != 6 {
		t.Errorf("raised to 10 after 3: %+v, want allowed with 6 left", d)
	}
	if err := l.SetWindow(ctx, 10*time.Hour); err != nil {
		t.Fatal(err)
	}
	if d := incoming(t, l, "k", true); d.ResetAfter > time.Hour {
		t.Errorf("open window after SetWindow(10h): ResetAfter %v, want its old end within 1h", d.ResetAfter)
	}
	if d := incoming(t, l, "fresh", false); d.ResetAfter != 10*time.Hour {
		t.Errorf("fresh window after SetWindow(10h): ResetAfter %v, want 10h", d.ResetAfter)
	}
	incoming(t, l, "fresh", true)
	if ttl := c.PTTL(ctx, "cw:fresh").Val(); ttl <= 9*time.Hour {
		t.Errorf("fresh window's PTTL = %v, want about 10h", ttl)
	}
}

// TestLiveSetting: Setting reports the built numbers, the live ones over
// them, which are live, and who set them when.
func TestLiveSetting(t *testing.T) {
	_, c := newClient(t)
	ctx := context.Background()
	clk := new(testutil.Clock)
	l, err := NewGCRA(c, "st", 10, 4, fake(clk))
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Setting(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := limiter.Numbers{Rate: 10, Burst: 4}
	if s.InForce != want || s.Built != want || s.LiveFields != 0 || !s.LiveAt.IsZero() {
		t.Errorf("Setting() before a change = %+v, want %+v in force and built, nothing live", s, want)
	}
	if err := l.SetRate(ctx, 20); err != nil {
		t.Fatal(err)
	}
	s, err = l.Setting(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.InForce != (limiter.Numbers{Rate: 20, Burst: 4}) || s.Built != want || s.LiveFields != limiter.FieldRate ||
		!s.LiveAt.Equal(t0) || s.LiveBy == "" {
		t.Errorf("Setting() after SetRate(20) = %+v, want rate 20 live, set at %v", s, t0)
	}
	r, err := NewReq(c, "st", "2r/s", 3, 0, fake(clk))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetBurst(ctx, 0.5); err != nil {
		t.Fatal(err)
	}
	if s, err := r.Setting(ctx); err != nil || s.InForce != (limiter.Numbers{Rate: 2, Burst: 0.5}) || s.LiveFields != limiter.FieldBurst {
		t.Errorf("Req Setting() after SetBurst(0.5) = %+v, %v", s, err)
	}
}

// TestLiveBadNumbers: a setter refuses what the constructor refuses, with
// the constructor's error, and writes nothing.
func TestLiveBadNumbers(t *testing.T) {
	_, c := newClient(t)
	ctx := context.Background()
	o := Options{Timeout: callTimeout}
	req, _ := NewReq(c, "bad", "10r/s", 5, 0, o)
	cnt, _ := NewCount(c, "bad", 10, time.Second, o)
	sw, _ := NewSlidingWindow(c, "bad", 10, time.Hour, o)
	gc, _ := NewGCRA(c, "bad", 1e6, 1000, o)
	slow, _ := NewGCRA(c, "slow", 1e-6, 1, o)
	for _, tt := range []struct {
		name string
		call func() error
		want error
	}{
		{"Req.SetRate(0)", func() error { return req.SetRate(ctx, 0) }, limiter.ErrBadRate},
		{"Req.SetRate(0.0009)", func() error { return req.SetRate(ctx, 0.0009) }, limiter.ErrBadRate},
		{"Req.SetRate(NaN)", func() error { return req.SetRate(ctx, nan()) }, limiter.ErrBadRate},
		{"Req.SetRate(+Inf)", func() error { return req.SetRate(ctx, inf()) }, limiter.ErrBadRate},
		{"Req.SetBurst(-1)", func() error { return req.SetBurst(ctx, -1) }, limiter.ErrBadBurst},
		{"Req.SetBurst(1e12)", func() error { return req.SetBurst(ctx, 1e12) }, limiter.ErrBadBurst},
		{"Count.SetLimit(0)", func() error { return cnt.SetLimit(ctx, 0) }, limiter.ErrBadLimit},
		{"Count.SetLimit(2^53+1)", func() error { return cnt.SetLimit(ctx, 1<<53+1) }, limiter.ErrBadLimit},
		{"Count.SetWindow(999µs)", func() error { return cnt.SetWindow(ctx, 999*time.Microsecond) }, limiter.ErrBadWindow},
		{"SlidingWindow.SetLimit(-1)", func() error { return sw.SetLimit(ctx, -1) }, limiter.ErrBadLimit},
		{"SlidingWindow.SetLimit(2^40)", func() error { return sw.SetLimit(ctx, 1<<40) }, limiter.ErrBadWindow},
		{"GCRA.SetRate(0)", func() error { return gc.SetRate(ctx, 0) }, limiter.ErrBadRate},
		{"GCRA.SetRate(3e6)", func() error { return gc.SetRate(ctx, 3e6) }, limiter.ErrBadRate},
		{"GCRA.SetRate(1e-9)", func() error { return gc.SetRate(ctx, 1e-9) }, limiter.ErrBadRate},
		{"GCRA.SetBurst(0)", func() error { return gc.SetBurst(ctx, 0) }, limiter.ErrBadBurst},
		{"GCRA.SetBurst(4000) at 1e-6/s", func() error { return slow.SetBurst(ctx, 4000) }, limiter.ErrBadBurst},
		{"GCRA.SetRate(1e-7) with burst 1000", func() error { return gc.SetRate(ctx, 1e-7) }, limiter.ErrBadBurst},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Errorf("%s = %v, want %v", tt.name, err, tt.want)
			}
		})
	}
	if n := c.Exists(ctx, "bad|limits|req", "bad|limits|count", "bad|limits|sliding", "bad|limits|gcra", "slow|limits|gcra").Val(); n != 0 {
		t.Errorf("refused numbers wrote %d live hashes", n)
	}
}

// TestLiveConcurrent: decisions of one host race another's changes of the
// numbers, and none fails or decides on numbers that are neither.
func TestLiveConcurrent(t *testing.T) {
	r, _ := newClient(t)
	ctx := context.Background()
	for _, cached := range []bool{false, true} {
		t.Run(fmt.Sprintf("cached=%v", cached), func(t *testing.T) {
			o := Options{Timeout: callTimeout, LiveEvery: time.Microsecond}
			p := fmt.Sprintf("race-%v", cached)
			a, err := NewCount(hostClient(t, r, cached), p, 3, time.Hour, o)
			if err != nil {
				t.Fatal(err)
			}
			b, err := NewCount(hostClient(t, r, cached), p, 3, time.Hour, o)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						d, err := b.Incoming(ctx, fmt.Sprintf("k%d-%d", g, i%50), true)
						if err != nil {
							t.Errorf("Incoming: %v", err)
							return
						}
						if d.Allowed && (d.Remaining < 0 || d.Remaining > 6) || !d.Allowed && d.State >= 0 {
							t.Errorf("a decision on a limit neither 3 nor 7: %+v", d)
							return
						}
					}
				}()
			}
			for i := 0; i < 50; i++ {
				if err := a.SetLimit(ctx, 7); err != nil {
					t.Error(err)
				}
				if err := a.UnsetLive(ctx); err != nil {
					t.Error(err)
				}
			}
			close(stop)
			wg.Wait()
		})
	}
}

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }

// TestLiveHostile: a live hash with numbers the limiter refuses, or a key
// that is not a hash, fails decisions, Setting and the setters with
// ErrBadLive, and never panics or decides. UnsetLive clears it.
func TestLiveHostile(t *testing.T) {
	r, c := newClient(t)
	ctx := context.Background()
	values := []string{"abc", "", "nan", "inf", "-inf", "-5", "0", "1.5", "1e400", "9007199254740993000", " "}
	for _, cached := range []bool{false, true} {
		for _, k := range liveKinds {
			t.Run(fmt.Sprintf("%s/cached=%v", k.name, cached), func(t *testing.T) {
				clk := new(testutil.Clock)
				o := fake(clk)
				o.LiveEvery = time.Nanosecond
				p := fmt.Sprintf("hostile-%s-%v", k.name, cached)
				l, err := k.build(hostClient(t, r, cached), p, o)
				if err != nil {
					t.Fatal(err)
				}
				lk := p + "|limits|" + k.name
				check := func(what string) {
					t.Helper()
					clk.Advance(time.Nanosecond)
					if d, err := l.Incoming(ctx, "k", true); !errors.Is(err, ErrBadLive) {
						t.Errorf("%s: Incoming = %+v, %v; want ErrBadLive", what, d, err)
					}
					if _, err := l.Setting(ctx); !errors.Is(err, ErrBadLive) {
						t.Errorf("%s: Setting = %v, want ErrBadLive", what, err)
					}
					if err := k.raise(l); !errors.Is(err, ErrBadLive) {
						t.Errorf("%s: setter = %v, want ErrBadLive", what, err)
					}
				}
				for _, f := range l.(interface{ liveFieldsOf() []string }).liveFieldsOf() {
					for _, v := range values {
						if k.name == "req" && f == "burst" && (v == "1.5" || v == "0") {
							continue // a fractional or empty burst is a Req's
						}
						c.Del(ctx, lk)
						c.HSet(ctx, lk, f, v)
						check(fmt.Sprintf("%s=%q", f, v))
					}
				}
				c.Del(ctx, lk)
				c.Set(ctx, lk, "not a hash", 0)
				check("a string")
				if err := l.UnsetLive(ctx); err != nil {
					t.Fatal(err)
				}
				clk.Advance(time.Nanosecond)
				if got := fill(t, l, "after"); got != k.built {
					t.Errorf("after UnsetLive: admitted %d, want %d", got, k.built)
				}
			})
		}
	}
}

// TestHashTag: the tag is what Redis Cluster hashes, so a prefix with one
// puts its keys and its live hash in one slot.
func TestHashTag(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"api", ""},
		{"{api}", "api"},
		{"x{api}y", "api"},
		{"{}api", ""},
		{"{api", ""},
		{"a}{b}", "b"},
		{"{a}{b}", "a"},
	} {
		if got := hashTag(tt.in); got != tt.want {
			t.Errorf("hashTag(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestLiveDecisionFields: a decision's durations and counts come from the
// numbers in force, not the built ones.
func TestLiveDecisionFields(t *testing.T) {
	_, c := newClient(t)
	ctx := context.Background()
	clk := new(testutil.Clock)
	r, err := NewReq(c, "df", "1r/s", 5, 0, fake(clk))
	if err != nil {
		t.Fatal(err)
	}
	incoming(t, r, "a", true)
	if d := incoming(t, r, "a", true); d.Delay != time.Second || d.Remaining != 4 {
		t.Errorf("Req at 1r/s burst 5: second request %+v, want Delay 1s, Remaining 4", d)
	}
	if err := r.SetRate(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := r.SetBurst(ctx, 2.5); err != nil {
		t.Fatal(err)
	}
	incoming(t, r, "b", true)
	if d := incoming(t, r, "b", true); d.Delay != 500*time.Millisecond || d.Remaining != 1 {
		t.Errorf("Req at 2r/s burst 2.5: second request %+v, want Delay 500ms, Remaining 1", d)
	}
	if d := incoming(t, r, "b", true); !d.Allowed {
		t.Errorf("Req at burst 2.5: third request %+v, want allowed", d)
	}
	if d := incoming(t, r, "b", false); d.Allowed || d.RetryAfter != 250*time.Millisecond {
		t.Errorf("Req at 2r/s burst 2.5: fourth request %+v, want a rejection for 250ms", d)
	}
	g, err := NewGCRA(c, "dg", 10, 10, fake(clk))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetRate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := g.SetBurst(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if d := incoming(t, g, "a", true); !d.Allowed || d.Remaining != 1 || d.ResetAfter != time.Second {
		t.Errorf("GCRA at 1/s burst 2: first request %+v, want Remaining 1, ResetAfter 1s", d)
	}
	incoming(t, g, "a", true)
	if d := incoming(t, g, "a", false); d.Allowed || d.RetryAfter != time.Second {
		t.Errorf("GCRA at 1/s burst 2: third request %+v, want a rejection for 1s", d)
	}
	if err := g.UncommitN(ctx, "a", 2); err != nil {
		t.Errorf("UncommitN(2) at the live burst 2: %v", err)
	}
	if err := g.UncommitN(ctx, "a", 3); !errors.Is(err, limiter.ErrBadCost) {
		t.Errorf("UncommitN(3) at the live burst 2 = %v, want ErrBadCost", err)
	}
}
