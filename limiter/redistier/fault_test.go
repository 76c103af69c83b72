package redistier

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
)

// faultTimeout is the per-call timeout of the fault tests; every decision
// must return within it plus faultSlack.
const (
	faultTimeout = 50 * time.Millisecond
	faultSlack   = 20 * time.Millisecond
)

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
		local, err := limiter.NewCount(d, 3, time.Hour)
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
// result and duration.
func during(t *testing.T, phase string, cases []policyCase, ls []*GCRA, n int) {
	t.Helper()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		slowest time.Duration
	)
	for i, pc := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < n; j++ {
				start := time.Now()
				d, err := ls[i].Incoming(context.Background(), "k", true)
				took := time.Since(start)
				mu.Lock()
				slowest = max(slowest, took)
				mu.Unlock()
				if took > faultTimeout+faultSlack {
					t.Errorf("%s %s call %d took %v, want ≤ %v", phase, pc.name, j, took, faultTimeout+faultSlack)
				}
				if msg := pc.check(j, d, err); msg != "" {
					t.Errorf("%s %s call %d = %+v, %v: %s", phase, pc.name, j, d, err, msg)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%s: slowest decision %v (timeout %v)", phase, slowest, faultTimeout)
}

// recovered waits until every limiter reaches Redis again, and fails the
// test when one does not within a second.
func recovered(t *testing.T, phase string, ls []*GCRA) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
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
		r, c := newClient(t)
		cases := policyCases()
		ls := newPolicyLimiters(t, c, d, cases)
		recovered(t, "start", ls)

		t.Run("SIGKILL", func(t *testing.T) {
			r.Kill()
			during(t, "killed", cases[:3], ls[:3], 10)
			during(t, "killed", cases[3:], ls[3:], 5)
			r.Restart()
			recovered(t, "after restart", ls)
		})
		t.Run("SIGSTOP", func(t *testing.T) {
			r.Stop()
			during(t, "stopped", cases[:3], ls[:3], 10)
			r.Cont()
			recovered(t, "after SIGCONT", ls)
		})
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
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > goroutines {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before, %d after:\n%s", goroutines, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
