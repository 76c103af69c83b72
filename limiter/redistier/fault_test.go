package redistier

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
)

// faultTimeout is the per-call timeout of the fault tests: each script run
// is checked to carry a deadline within it (newFaultClient), and a call
// that does not return is caught by a hang guard, not timed.
const faultTimeout = 50 * time.Millisecond

// tieredTimeout is the timeout of the Tiered fault tests that need each of
// their flushes to a healthy server to succeed: they make few, so it can
// be generous.
const tieredTimeout = time.Second

// policyCase is one failure policy and what a decision looks like under it
// while Redis is gone.
type policyCase struct {
	name   string
	policy Failure
	check  func(i int, d limiter.Decision, err error) string // "" when right
}

func policyCases() []policyCase {
	return []policyCase{
		{"FailError", FailError, func(_ int, d limiter.Decision, err error) string {
			if !errors.Is(err, ErrUnavailable) || d.Allowed {
				return "want ErrUnavailable and a rejection"
			}
			return ""
		}},
		{"FailOpen", FailOpen, func(_ int, d limiter.Decision, err error) string {
			if err != nil || !d.Allowed || d.Committed {
				return "want allowed, not committed, no error"
			}
			return ""
		}},
		{"FailClosed", FailClosed, func(_ int, d limiter.Decision, err error) string {
			if err != nil || d.Allowed || d.RetryAfter != faultTimeout {
				return "want rejected with RetryAfter = timeout, no error"
			}
			return ""
		}},
		{"FailLocal", FailLocal, func(i int, d limiter.Decision, err error) string {
			// The local share is a Count of 3: the first 3 pass.
			if err != nil || d.Allowed != (i < 3) {
				return "want the local share's decision: 3 allowed, then rejected"
			}
			return ""
		}},
	}
}

// newPolicyLimiters returns, for each policy (FailLocal's share a Count over d), a GCRA on c generous enough
// never to reject while Redis answers.
func newPolicyLimiters(t *testing.T, c redis.UniversalClient, d *dict.Dict, cases []policyCase) []*GCRA {
	ls := make([]*GCRA, len(cases))
	for i, pc := range cases {
		local, err := limiter.NewCount(d, "local", 3, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Timeout: faultTimeout, OnFailure: pc.policy, Local: local}
		if ls[i], err = NewGCRA(c, "fault-"+pc.name, 1e6, 1e6, o); err != nil {
			t.Fatal(err)
		}
	}
	return ls
}

// during runs n decisions under each policy at once and checks each one's
// result; release, when not nil, ends a call that hangs (guard). Against a
// stopped server a call fails by its timeout, or by a refused connection
// once the server's accept queue is full of the connections that timed
// out before.
func during(t *testing.T, phase string, cases []policyCase, ls []*GCRA, n int, release func()) {
	t.Helper()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		slowest time.Duration
	)
	for i, pc := range cases {
		wg.Go(func() {
			for j := 0; j < n; j++ {
				stop := guard(t, fmt.Sprintf("%s %s call %d", phase, pc.name, j), release)
				start := time.Now()
				d, err := ls[i].Incoming(context.Background(), "k", true)
				took := time.Since(start)
				stop()
				mu.Lock()
				slowest = max(slowest, took)
				mu.Unlock()
				if msg := pc.check(j, d, err); msg != "" {
					t.Errorf("%s %s call %d = %+v, %v: %s", phase, pc.name, j, d, err, msg)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%s: slowest decision %v (timeout %v)", phase, slowest, faultTimeout)
}

// isTimeout reports whether err says a deadline passed.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// recovered waits until every limiter reaches Redis again, and fails the
// test when one does not within faultHang.
func recovered(t *testing.T, phase string, ls []*GCRA) {
	t.Helper()
	deadline := time.Now().Add(faultHang)
	for i, l := range ls {
		for {
			before := l.Stats().Errors
			d, err := l.Incoming(context.Background(), "k", true)
			if err == nil && l.Stats().Errors == before && d.Allowed && d.Committed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: limiter %d did not recover: %+v, %v", phase, i, d, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestFaults(t *testing.T) {
	d, err := dict.Open(testutil.TempZone(t), dict.Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	goroutines := runtime.NumGoroutine() // the dictionary's clock runs already
	func() {
		r, c, h := newFaultClient(t, faultTimeout)
		cases := policyCases()
		ls := newPolicyLimiters(t, c, d, cases)
		recovered(t, "start", ls)

		t.Run("SIGKILL", func(t *testing.T) {
			r.Kill()
			during(t, "killed", cases[:3], ls[:3], 10, nil)
			during(t, "killed", cases[3:], ls[3:], 5, nil)
			r.Restart()
			recovered(t, "after restart", ls)
		})
		t.Run("SIGSTOP", func(t *testing.T) {
			r.Stop()
			during(t, "stopped", cases[:3], ls[:3], 10, r.Cont)
			r.Cont()
			recovered(t, "after SIGCONT", ls)
		})
		h.checkDeadlines(t)
		for i, l := range ls {
			s := l.Stats()
			wantFallbacks, wantErrors := s.Errors, uint64(20)
			switch cases[i].policy {
			case FailError:
				wantFallbacks = 0
			case FailLocal:
				wantErrors = 5
			}
			if s.Errors < wantErrors || s.Fallbacks != wantFallbacks || s.Calls <= s.Errors {
				t.Errorf("%s: Stats = %+v, want ≥ %d errors, fallbacks %d", cases[i].name, s, wantErrors, wantFallbacks)
			}
		}
		c.Close()
	}()
	testutil.WaitGoroutines(t, goroutines, faultHang)
}

// TestTieredFaults checks that a Tiered host keeps deciding in its zone
// while Redis is hung or gone until a flush fails (TestTieredPolicies tests
// the policies after), that a flush fails within its timeout and keeps the host's
// count, and that the next flush after Redis is back carries it: a flush
// that timed out against a hung server but ran when it woke does not count
// twice, and a server restarted empty gets the host's whole count back.
func TestTieredFaults(t *testing.T) {
	r, c, h := newFaultClient(t, tieredTimeout)
	d, clk := zonetest.Open(t, dict.Options{})
	l, err := NewTiered(d, c, "tf", 100, 10*time.Second, 100*time.Millisecond, Options{Timeout: tieredTimeout, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admit := func(n int) {
		for i := 0; i < n; i++ {
			if dec := incoming(t, l, "k", true); !dec.Allowed {
				t.Fatalf("Incoming rejected: %+v", dec)
			}
		}
	}
	global := func() string { // the sum of the hosts' counts
		h, err := c.HGetAll(ctx, "tf:k:"+strconv.FormatInt(t0.UnixMilli()/10000, 10)).Result()
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for f, v := range h {
			if !strings.Contains(f, ":") {
				x, _ := strconv.ParseInt(v, 10, 64)
				n += x
			}
		}
		return strconv.FormatInt(n, 10)
	}
	// A flush fails within its timeout: against a stopped server only the
	// timeout can end it (newFaultClient), and with a timeout error.
	flushFails := func(phase string, release func()) {
		stop := guard(t, phase+": Flush", release)
		_, err := l.Flush(ctx)
		stop()
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("%s: Flush = %v, want ErrUnavailable", phase, err)
		}
		if release != nil && !isTimeout(err) {
			t.Fatalf("%s: Flush = %v, want a timeout", phase, err)
		}
	}
	admit(5)
	if _, err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	admit(3)
	flushFails("stopped", r.Cont)
	r.Cont()
	if _, err := l.Flush(ctx); err != nil {
		t.Fatalf("Flush after SIGCONT: %v", err)
	}
	if got := global(); got != "8" {
		t.Fatalf("global count after recovery = %s, want 8", got)
	}
	r.Kill()
	admit(2)
	flushFails("killed", nil)
	r.Restart() // the server lost its data; the host still has its unflushed 2
	if _, err := l.Flush(ctx); err != nil {
		t.Fatalf("Flush after restart: %v", err)
	}
	if got := global(); got != "10" {
		t.Fatalf("global count after restart = %s, want 10 (the host's whole count)", got)
	}
	if s := l.Stats(); s.Errors != 2 || s.Calls != 5 {
		t.Fatalf("Stats = %+v, want 5 calls, 2 errors", s)
	}
	h.checkDeadlines(t)
}

// TestCombineWithLocal runs a Redis limiter under limiter.Combine with a
// local one: a request the local limiter rejects is not counted in Redis.
func TestCombineWithLocal(t *testing.T) {
	_, c := newClient(t)
	d, err := dict.Open(testutil.TempZone(t), dict.Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	local, err := limiter.NewCount(d, "local", 2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	global, err := NewGCRA(c, "combine", 1, 10, Options{Timeout: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ls, keys := []limiter.Limiter{global, local}, []string{"user", "user"}
	for i, want := range []bool{true, true, false} {
		dec, err := limiter.Combine(ctx, ls, keys)
		if err != nil || dec.Allowed != want {
			t.Fatalf("call %d: Combine = %+v, %v; want allowed %v", i+1, dec, err, want)
		}
	}
	dec := incoming(t, global, "user", false)
	if dec.Remaining != 7 {
		t.Fatalf("GCRA after 2 combined requests: Remaining %d, want 7 (10 − 2 − this one)", dec.Remaining)
	}
}
