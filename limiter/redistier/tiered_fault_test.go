package redistier

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
)

// TestTieredPolicies runs a Tiered per failure policy, each flushing every
// 20 ms with Run, while redis-server is SIGKILLed and restarted, then
// SIGSTOPped and continued. In each outage every host must turn to its
// policy (once flushes have failed as Tiered says: two in a row, over 5
// intervals and the timeout) and decide as the policy says (policyCases),
// and no decision may send a command to Redis; after it, every host must
// decide in its zone again and flush to Redis; at the end no goroutine is
// left. The windows' clock (and the zone's) stands still: a flush reaches
// Redis only for the keys counted in the current window, and a window that
// turned between two phases would leave none.
func TestTieredPolicies(t *testing.T) {
	const interval = 20 * time.Millisecond
	d, clk := zonetest.Open(t, dict.Options{})
	goroutines := runtime.NumGoroutine()
	func() {
		r, c, h := newFaultClient(t, faultTimeout)
		cases := policyCases()
		ls := make([]*Tiered, len(cases))
		ctx, cancel := context.WithCancel(context.Background())
		var runs sync.WaitGroup
		defer func() { cancel(); runs.Wait(); c.Close() }()
		for i, pc := range cases {
			local, err := limiter.NewCount(d, "local", 3, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			o := Options{Timeout: faultTimeout, OnFailure: pc.policy, Local: local, Now: clk.Now}
			if ls[i], err = NewTiered(d, c, "tp-"+pc.name, 1e9, 10*time.Second, interval, o); err != nil {
				t.Fatal(err)
			}
			runs.Add(1)
			go func() { defer runs.Done(); ls[i].Run(ctx) }()
		}
		// normal and outage take the running (sub)test's t: a subtest may
		// not fail its parent.
		normal := func(t *testing.T, phase string) { // every host decides in its zone again
			t.Helper()
			deadline := time.Now().Add(faultHang)
			for i, l := range ls {
				for {
					before := l.Stats().Fallbacks
					dec, err := l.Incoming(decisionCtx(), "k", true)
					if err == nil && dec.Allowed && dec.Committed && l.Stats().Fallbacks == before {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: %s not back to normal: %+v, %v", phase, cases[i].name, dec, err)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			// and has flushed to Redis since: a script run that succeeded,
			// on the key just counted.
			for i, l := range ls {
				s := l.Stats()
				for good := s.Calls - s.Errors; ; {
					if s = l.Stats(); s.Calls-s.Errors > good {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: %s does not flush", phase, cases[i].name)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
		}
		outage := func(t *testing.T, phase string) {
			t.Helper()
			var wg sync.WaitGroup
			for i, pc := range cases {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l, key := ls[i], "k-"+phase
					var slowest, turned time.Duration
					decide := func(commit bool) (limiter.Decision, error) {
						start := time.Now()
						dec, err := l.Incoming(decisionCtx(), key, commit)
						slowest = max(slowest, time.Since(start))
						return dec, err
					}
					// Until the host turns to its policy it decides in its
					// zone; a dry run probes without counting. It turns once
					// flushes have failed for 5 intervals and the timeout:
					// the guard is against a hang. Its flushes reach Redis for "k", which
					// normal counted in the window, still the current one.
					start := time.Now()
					for {
						before := l.Stats().Fallbacks
						_, err := decide(false)
						if err != nil || l.Stats().Fallbacks > before {
							turned = time.Since(start)
							break
						}
						if time.Since(start) > faultHang {
							t.Errorf("%s %s: still deciding in the zone after %v", phase, pc.name, time.Since(start))
							return
						}
						time.Sleep(time.Millisecond)
					}
					for j := 0; j < 10; j++ {
						dec, err := decide(true)
						if msg := pc.check(j, dec, err); msg != "" {
							t.Errorf("%s %s call %d = %+v, %v: %s", phase, pc.name, j, dec, err, msg)
						}
					}
					t.Logf("%s %s: policy after %v, slowest decision %v (timeout %v)", phase, pc.name, turned.Round(time.Millisecond), slowest, faultTimeout)
				}()
			}
			wg.Wait()
		}
		normal(t, "start")
		t.Run("SIGKILL", func(t *testing.T) {
			r.Kill()
			outage(t, "killed")
			r.Restart()
			normal(t, "after restart")
		})
		t.Run("SIGSTOP", func(t *testing.T) {
			r.Stop()
			outage(t, "stopped")
			r.Cont()
			normal(t, "after SIGCONT")
		})
		for i, l := range ls {
			s := l.Stats()
			var wantFallbacks uint64 // 2 outages × (≥ 1 probe + 10 decisions)
			if cases[i].policy != FailError {
				wantFallbacks = 22
			}
			if s.Errors < 2 || s.Fallbacks < wantFallbacks || (wantFallbacks == 0 && s.Fallbacks != 0) || s.Calls <= s.Errors {
				t.Errorf("%s: Stats = %+v, want ≥ 2 errors, ≥ %d fallbacks", cases[i].name, s, wantFallbacks)
			}
			t.Logf("%s: %+v", cases[i].name, s)
		}
		// Decisions never wait for Redis: none sent it a command, and
		// every flush had its timeout.
		if n := h.byDecision.Load(); n != 0 {
			t.Errorf("decisions sent %d script runs to Redis, want none", n)
		}
		h.checkDeadlines(t)
	}()
	testutil.WaitGoroutines(t, goroutines, faultHang)
}

// TestTieredStale checks the other way a host considers Redis failed: no
// flush has been answered for 5 intervals plus the timeout and no flush is
// coming (the lease lapsed, no Run, no Flush called in that time). Then
// Incoming and Uncommit follow the policy, and an answered flush ends it.
func TestTieredStale(t *testing.T) {
	_, c := newClient(t)
	d, clk := zonetest.Open(t, dict.Options{})
	local, err := limiter.NewCount(d, "local", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Timeout: tieredTimeout, Now: clk.Now, OnFailure: FailLocal, Local: local}
	l, err := NewTiered(d, c, "stale", 100, 10*time.Second, 100*time.Millisecond, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stale := 5*100*time.Millisecond + tieredTimeout // 5 intervals + timeout
	for _, tc := range []struct {
		at      time.Duration
		flush   bool
		allowed bool
		local   bool // decided by the local share
		undo    bool // Uncommit after the decision
	}{
		{0, false, true, false, false}, // never flushed: not failed
		{0, true, true, false, false},
		{stale, false, true, false, false},                      // still fresh
		{stale + time.Millisecond, false, true, true, true},     // stale: the local share (1) allows, and takes it back
		{stale + 2*time.Millisecond, false, true, true, false},  // so it allows once more
		{stale + 3*time.Millisecond, false, false, true, false}, // then rejects
		{stale + 50*time.Millisecond, true, true, false, false}, // a good flush: back in the zone
	} {
		name := fmt.Sprintf("+%v", tc.at)
		clk.Set(tc.at)
		if tc.flush {
			if _, err := l.Flush(ctx); err != nil {
				t.Fatalf("%s: Flush: %v", name, err)
			}
		}
		before := l.Stats().Fallbacks
		dec := incoming(t, l, "k", true)
		if local := l.Stats().Fallbacks > before; dec.Allowed != tc.allowed || local != tc.local {
			t.Fatalf("%s: Incoming = %+v (local share: %v), want allowed %v, local %v", name, dec, local, tc.allowed, tc.local)
		}
		if tc.undo {
			if err := l.Uncommit(ctx, "k"); err != nil {
				t.Fatalf("%s: Uncommit: %v", name, err)
			}
		}
	}
	clk.Set(2*stale + time.Second) // stale again
	l2, err := NewTiered(d, c, "stale", 100, 10*time.Second, 100*time.Millisecond, Options{Timeout: tieredTimeout, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(3*stale + time.Second + time.Millisecond) // nor has l2 flushed since it was made
	if _, err := l2.Incoming(ctx, "k", true); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("another process of the host under FailError: %v, want ErrUnavailable", err)
	}
	// An idle host: once the windows counted turned, a flush has nothing
	// to send and asks a healthy Redis nothing, so the last answer grows
	// old; while flushes come, that is no failure.
	clk.Set(25 * time.Second)
	if ok, err := l2.Flush(ctx); !ok || err != nil {
		t.Fatalf("Flush with nothing to send = %v, %v", ok, err)
	}
	if dec, err := l2.Incoming(ctx, "k", true); err != nil || !dec.Allowed {
		t.Fatalf("idle host, flushing: Incoming = %+v, %v; want allowed in the zone", dec, err)
	}
	clk.Set(25*time.Second + stale + time.Millisecond) // no flush since
	if _, err := l2.Incoming(ctx, "k", true); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("idle host, no flush for the stale time: %v, want ErrUnavailable", err)
	}
}

// TestTieredReplacedFlusher checks that a process that replaces a host's
// dead flusher decides in the zone before its first flush. By then the
// dead flusher's last answer is stale and its lease has lapsed. The new
// instance has the stale time to flush, as if it had just called Flush.
// Its decisions count, and its first flush carries them to Redis. Past
// that time without a flush, Redis is failed as before.
func TestTieredReplacedFlusher(t *testing.T) {
	_, c := newClient(t)
	d, clk := zonetest.Open(t, dict.Options{})
	ctx := context.Background()
	const interval = 100 * time.Millisecond
	o := Options{Timeout: tieredTimeout, Now: clk.Now} // FailError: a fallback is an error
	stale := 5*interval + tieredTimeout
	dead, err := NewTiered(d, c, "replaced", 100, resetWindow, interval, o)
	if err != nil {
		t.Fatal(err)
	}
	incoming(t, dead, "k", true)
	if ok, err := dead.Flush(ctx); !ok || err != nil {
		t.Fatalf("the first flusher's Flush = %v, %v", ok, err)
	}

	born := stale + time.Second
	clk.Set(born)
	l, err := NewTiered(d, c, "replaced", 100, resetWindow, interval, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{born, born + stale} {
		clk.Set(at)
		if dec, err := l.Incoming(ctx, "k", true); err != nil || !dec.Committed {
			t.Fatalf("Incoming at +%v, before the new instance's first flush = %+v, %v; want it counted in the zone", at, dec, err)
		}
	}
	clk.Set(born + stale + time.Millisecond)
	if _, err := l.Incoming(ctx, "k", true); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Incoming once the new instance had the stale time to flush = %v, want ErrUnavailable", err)
	}
	if ok, err := l.Flush(ctx); !ok || err != nil {
		t.Fatalf("the new instance's Flush = %v, %v; want it the flusher", ok, err)
	}
	if n, _ := globalCount(t, c, clk, "replaced", "k"); n != 3 {
		t.Errorf("Redis holds a count of %d, want 3: one from the dead flusher, two from the new instance", n)
	}
}
