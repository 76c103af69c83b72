package admit_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/headers"
)

func mustGate(t *testing.T, l limiter.Limiter, o admit.Options) *admit.Gate {
	t.Helper()
	g, err := admit.New(l, o)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// admitOne runs Admit for key and returns what it wrote besides.
func admitOne(t *testing.T, g *admit.Gate, ctx context.Context, key string) (limiter.Decision, admit.Pass, http.Header, error) {
	t.Helper()
	h := http.Header{}
	d, pass, err := g.Admit(ctx, key, h.Set)
	return d, pass, h, err
}

func TestNewErrors(t *testing.T) {
	zone, _ := zonetest.Open(t, dict.Options{})
	l, err := limiter.NewCount(zone, "c", 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		l    limiter.Limiter
		o    admit.Options
		want error
	}{
		{"nil limiter", nil, admit.Options{}, admit.ErrNilLimiter},
		{"negative limit", l, admit.Options{Policy: limiter.Policy{Limit: -1}}, admit.ErrBadPolicy},
		{"negative window", l, admit.Options{Policy: limiter.Policy{Limit: 1, Window: -time.Second}}, admit.ErrBadPolicy},
		{"bad name", l, admit.Options{PolicyName: "per\nip"}, admit.ErrBadPolicy},
	} {
		if _, err := admit.New(c.l, c.o); !errors.Is(err, c.want) {
			t.Errorf("%s: New = %v, want %v", c.name, err, c.want)
		}
	}
}

// TestRejection: a rejection returns the decision with Retry-After set,
// NoHeaders or not (I3), and the policy's headers unless NoHeaders.
func TestRejection(t *testing.T) {
	for _, noHeaders := range []bool{false, true} {
		zone, _ := zonetest.Open(t, dict.Options{})
		l, err := limiter.NewCount(zone, "c", 1, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		g := mustGate(t, l, admit.Options{NoHeaders: noHeaders, PolicyName: "per-ip"})
		if d, _, _, err := admitOne(t, g, context.Background(), "k"); err != nil || !d.Allowed {
			t.Fatalf("first request: %+v, %v", d, err)
		}
		d, _, h, err := admitOne(t, g, context.Background(), "k")
		if err != nil || d.Allowed {
			t.Fatalf("second request: %+v, %v; want a rejection", d, err)
		}
		if got := h.Get(headers.RetryAfter); got != "60" {
			t.Errorf("NoHeaders %t: Retry-After %q, want 60", noHeaders, got)
		}
		if got, want := h.Get("RateLimit-Policy"), `"per-ip";q=1;w=60`; noHeaders && got != "" || !noHeaders && got != want {
			t.Errorf("NoHeaders %t: RateLimit-Policy %q", noHeaders, got)
		}
	}
}

// TestDelay: an allowed request's delay is waited out, unless NoDelay;
// a wait that ends with the context gives the request back (I1).
func TestDelay(t *testing.T) {
	for _, c := range []struct {
		name    string
		noDelay bool
		cancel  bool
	}{{"waits", false, false}, {"nodelay", true, false}, {"cancelled", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			zone, _ := zonetest.Open(t, dict.Options{})
			l, err := limiter.NewReq(zone, "r", 1, 10) // the second request waits 1 s
			if err != nil {
				t.Fatal(err)
			}
			var waited []time.Duration
			calls := 0
			g := mustGate(t, l, admit.Options{NoDelay: c.noDelay, Wait: func(ctx context.Context, d time.Duration) error {
				waited = append(waited, d)
				if calls++; c.cancel && calls == 1 {
					return context.Canceled
				}
				return nil
			}})
			if _, _, _, err := admitOne(t, g, context.Background(), "k"); err != nil {
				t.Fatal(err)
			}
			d, _, _, err := admitOne(t, g, context.Background(), "k")
			switch {
			case c.cancel:
				if !errors.Is(err, admit.ErrCancelled) || !errors.Is(err, context.Canceled) {
					t.Fatalf("Admit = %v, want ErrCancelled and context.Canceled", err)
				}
			case err != nil || !d.Allowed:
				t.Fatalf("Admit = %+v, %v", d, err)
			}
			want := []time.Duration{time.Second}
			if c.noDelay {
				want = nil
			}
			if len(waited) != len(want) || len(want) == 1 && waited[0] != want[0] {
				t.Errorf("waited %v, want %v", waited, want)
			}
			waited = nil
			// The third request waits 2 s behind two counted, 1 s
			// behind one given back.
			d, _, _, err = admitOne(t, g, context.Background(), "k")
			wantDelay := 2 * time.Second
			if c.cancel {
				wantDelay = time.Second
			}
			if err != nil || d.Delay != wantDelay {
				t.Errorf("third request: delay %v (%v), want %v", d.Delay, err, wantDelay)
			}
		})
	}
}

// TestConnPass: an admitted Conn request counts until its Pass is done; a
// Conn request cancelled while delayed is left at once (I1).
func TestConnPass(t *testing.T) {
	zone, _ := zonetest.Open(t, dict.Options{})
	l, err := limiter.NewConn(zone, "c", 1, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var cancelled atomic.Bool
	g := mustGate(t, l, admit.Options{Wait: func(ctx context.Context, d time.Duration) error {
		if cancelled.Load() {
			return context.Canceled
		}
		return nil
	}})
	d, first, _, err := admitOne(t, g, context.Background(), "k")
	if err != nil || !d.Allowed || d.Delay != 0 {
		t.Fatalf("first: %+v, %v", d, err)
	}
	// The second is in the burst: delayed, and cancelled.
	cancelled.Store(true)
	if _, _, _, err := admitOne(t, g, context.Background(), "k"); !errors.Is(err, admit.ErrCancelled) {
		t.Fatalf("second: %v, want ErrCancelled", err)
	}
	// Left: the third finds one request in, as the second found.
	cancelled.Store(false)
	d, third, _, err := admitOne(t, g, context.Background(), "k")
	if err != nil || !d.Allowed || d.Delay == 0 {
		t.Fatalf("third: %+v, %v; want a delayed admission", d, err)
	}
	// Two in: a fourth is rejected until one is done.
	if d, _, _, err := admitOne(t, g, context.Background(), "k"); err != nil || d.Allowed {
		t.Fatalf("fourth: %+v, %v; want a rejection", d, err)
	}
	first.Done()
	third.Done()
	if d, _, _, err := admitOne(t, g, context.Background(), "k"); err != nil || !d.Allowed || d.Delay != 0 {
		t.Fatalf("after both were done: %+v, %v; want an admission without delay", d, err)
	}
	admit.Pass{}.Done() // the zero Pass: nothing to end
}

// TestPolicyFollowsLimiter: the headers announce the limiter's policy as it
// is at each decision (I2), unless Options fixes one.
func TestPolicyFollowsLimiter(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		zone, _ := zonetest.Open(t, dict.Options{})
		l, err := limiter.NewConn(zone, "c", 5, 0, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		o := admit.Options{}
		if fixed {
			o.Policy = limiter.Policy{Limit: 7}
		}
		g := mustGate(t, l, o)
		_, pass, h, err := admitOne(t, g, context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		pass.Done()
		if err := l.SetMax(9); err != nil {
			t.Fatal(err)
		}
		_, pass, h2, err := admitOne(t, g, context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		pass.Done()
		want1, want2 := "5", "9"
		if fixed {
			want1, want2 = "7", "7"
		}
		if got1, got2 := h.Get("X-RateLimit-Limit"), h2.Get("X-RateLimit-Limit"); got1 != want1 || got2 != want2 {
			t.Errorf("fixed %t: X-RateLimit-Limit %q then %q, want %q then %q", fixed, got1, got2, want1, want2)
		}
	}
}

// TestLimiterError: the limiter's error comes back as it is, with nothing
// written.
func TestLimiterError(t *testing.T) {
	zone, _ := zonetest.Open(t, dict.Options{})
	l, err := limiter.NewCount(zone, "c", 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	g := mustGate(t, l, admit.Options{})
	_, _, h, err := admitOne(t, g, context.Background(), "")
	if err == nil || errors.Is(err, admit.ErrCancelled) {
		t.Fatalf("Admit of an empty key = %v, want the limiter's error", err)
	}
	if len(h) != 0 {
		t.Errorf("headers written on an error: %v", h)
	}
}

// A Gate's tiers are Gates of their own, each with its limiter and its
// name as the policy's; "" is the Gate itself, and another name an error.
func TestTier(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	free, err := limiter.NewCount(d, "free", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	paid, err := limiter.NewCount(d, "paid", 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	g := mustGate(t, free, admit.Options{Tiers: []admit.Tier{{Name: "paid", Limiter: paid}}})
	if same, err := g.Tier(""); same != g || err != nil {
		t.Fatalf(`Tier("") = %p, %v; want the Gate %p`, same, err, g)
	}
	if _, err := g.Tier("gold"); !errors.Is(err, admit.ErrNoTier) {
		t.Fatalf(`Tier("gold") = %v, want ErrNoTier`, err)
	}
	tier, err := g.Tier("paid")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 1; i <= 4; i++ {
		dec, _, h, err := admitOne(t, tier, ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if dec.Allowed != (i <= 3) {
			t.Fatalf("paid request %d: Allowed %v", i, dec.Allowed)
		}
		if p := h.Get(headers.Policy); !strings.HasPrefix(p, `"paid"`) && !strings.HasPrefix(p, "paid") {
			t.Errorf("paid request %d: RateLimit-Policy %q does not name the tier", i, p)
		}
	}
	if dec, _, _, err := admitOne(t, g, ctx, "k"); err != nil || !dec.Allowed {
		t.Fatalf("the free tier after the paid one was spent: %+v, %v; want allowed: each tier has its own state", dec, err)
	}
}
