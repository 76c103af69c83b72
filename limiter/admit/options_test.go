package admit_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
)

// TestDryRun: a dry run lets every request through, undelayed and
// without headers unless DryRunHeaders, and counts the rejections an
// enforcing Gate over another zone makes of the same requests.
func TestDryRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers bool
	}{{"no headers", false}, {"headers", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dz, clk := zonetest.Open(t, dict.Options{})
			ez, _ := zonetest.Open(t, dict.Options{Clock: clk.UnixMilli})
			dl, _ := limiter.NewCount(dz, "login", 3, time.Minute)
			el, _ := limiter.NewCount(ez, "login", 3, time.Minute)
			waited := 0
			wait := func(context.Context, time.Duration) error { waited++; return nil }
			dry := mustGate(t, dl, admit.Options{DryRun: true, DryRunHeaders: tc.headers, Wait: wait})
			enf := mustGate(t, el, admit.Options{})
			rejected := 0
			for i := range 10 {
				var a admit.Admission
				if err := dry.Decide(context.Background(), "k", 1, &a); err != nil {
					t.Fatalf("dry Decide #%d = %v", i, err)
				}
				if !a.Decision.Allowed {
					t.Errorf("dry Decide #%d: Allowed = false, want true", i)
				}
				if got, want := a.Headers.Len() > 0, tc.headers; got != want {
					t.Errorf("dry Decide #%d: has headers = %v, want %v", i, got, want)
				}
				for j := range a.Headers.Len() {
					if f, _ := a.Headers.At(j); f.Name() == "Retry-After" {
						t.Errorf("dry Decide #%d: Retry-After set", i)
					}
				}
				var e admit.Admission
				if err := enf.Decide(context.Background(), "k", 1, &e); err != nil {
					t.Fatalf("enforcing Decide #%d = %v", i, err)
				}
				if !e.Decision.Allowed {
					rejected++
				}
				if a.DryRunRejected != !e.Decision.Allowed {
					t.Errorf("#%d: DryRunRejected = %v, enforcing Allowed = %v", i, a.DryRunRejected, e.Decision.Allowed)
				}
			}
			if got := dry.Stats().DryRunRejected(); got != 7 {
				t.Errorf("DryRunRejected() = %d, want 7", got)
			}
			if got, err := dl.DryRunRejected(); got != 7 || err != nil {
				t.Errorf("zone's DryRunRejected() = %d, %v, want 7", got, err)
			}
			if rejected != 7 {
				t.Errorf("enforcing rejections = %d, want 7", rejected)
			}
			if waited != 0 {
				t.Errorf("Wait called %d times, want 0", waited)
			}
		})
	}
}

// TestDryRunConn: a Conn's dry run leaves no request counted. The
// allowed ones are left by Done; the rejected ones were never committed.
func TestDryRunConn(t *testing.T) {
	z, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewConn(z, "c", 2, 0, time.Second)
	var st admit.Stats
	g := mustGate(t, l, admit.Options{DryRun: true, Stats: &st, Wait: func(context.Context, time.Duration) error {
		t.Error("Wait called in a dry run")
		return nil
	}})
	var passes []admit.Pass
	for i := range 5 {
		var a admit.Admission
		if err := g.Decide(context.Background(), "k", 1, &a); err != nil {
			t.Fatalf("Decide #%d = %v", i, err)
		}
		passes = append(passes, a.Pass)
	}
	if got := st.DryRunRejected(); got != 3 {
		t.Errorf("DryRunRejected() = %d, want 3", got)
	}
	for _, p := range passes {
		p.Done()
	}
	if v, _, err := z.Get("conn|c|k"); err != nil || v.Int() != 0 {
		t.Errorf(`Get("conn|c|k") = %v, %v; want 0`, v.Int(), err)
	}
}

// TestExempt: Exempt matches by prefix, an IPv4-mapped address as IPv4,
// and New refuses an invalid prefix.
func TestExempt(t *testing.T) {
	z, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewCount(z, "c", 1, time.Minute)
	if _, err := admit.New(l, admit.Options{Exempt: []netip.Prefix{{}}}); !errors.Is(err, admit.ErrBadExempt) {
		t.Errorf("New with an invalid prefix = %v, want ErrBadExempt", err)
	}
	g := mustGate(t, l, admit.Options{Exempt: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::/32")}})
	if !g.Exempts() {
		t.Errorf("Exempts() = false, want true")
	}
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"192.0.2.9", true},
		{"::ffff:192.0.2.9", true},
		{"192.0.3.1", false},
		{"2001:db8:1::1", true},
		{"2001:db9::1", false},
	} {
		if got := g.Exempt(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("Exempt(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	if mustGate(t, l, admit.Options{}).Exempts() {
		t.Errorf("Exempts() with no Exempt = true, want false")
	}
}

// TestRefund: Finish gives the cost back when Refund says so, and only
// then; a Pass without Refund needs no status.
func TestRefund(t *testing.T) {
	z, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewCount(z, "login", 3, time.Minute)
	g := mustGate(t, l, admit.Options{Refund: func(status int) bool { return status != 401 }})
	for i := range 100 {
		var a admit.Admission
		if err := g.Decide(context.Background(), "k", 2, &a); err != nil || !a.Decision.Allowed {
			t.Fatalf("success #%d: Decide = %v, Allowed %v; want nil, true", i, err, a.Decision.Allowed)
		}
		if !a.Pass.Refunds() {
			t.Fatalf("success #%d: Refunds() = false, want true", i)
		}
		a.Pass.Finish(200)
	}
	for i, want := range []bool{true, false} {
		var a admit.Admission
		if err := g.Decide(context.Background(), "k", 2, &a); err != nil {
			t.Fatal(err)
		}
		if a.Decision.Allowed != want {
			t.Errorf("failure #%d: Allowed = %v, want %v", i, a.Decision.Allowed, want)
		}
		a.Pass.Finish(401)
	}
	var a admit.Admission
	if err := mustGate(t, l, admit.Options{}).Decide(context.Background(), "other", 1, &a); err != nil {
		t.Fatal(err)
	}
	if a.Pass.Refunds() {
		t.Errorf("Refunds() without Refund = true, want false")
	}
}

// TestRefundCancelled: Finish gives the cost back even when the request's
// context has ended by then.
func TestRefundCancelled(t *testing.T) {
	z, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewCount(z, "login", 1, time.Minute)
	g := mustGate(t, l, admit.Options{Refund: func(int) bool { return true }})
	for i := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		var a admit.Admission
		if err := g.Decide(ctx, "k", 1, &a); err != nil || !a.Decision.Allowed {
			t.Fatalf("request %d: Decide = %v, Allowed %v; want nil, true", i, err, a.Decision.Allowed)
		}
		cancel()
		a.Pass.Finish(200)
	}
}
