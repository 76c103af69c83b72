package limiter

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// reqStep is one call of a Req vector and what it returns.
type reqStep struct {
	at    int64
	key   string
	op    string
	rej   bool    // rejected
	delay float64 // s
	state float64 // excess in requests
	// stored, when set, is the state the key must hold afterwards.
	stored *reqState
}

func (s reqStep) call() call { return call{s.at, s.key, s.op} }

func TestReqVectors(t *testing.T) {
	type vec struct {
		id          string
		rate, burst float64
		steps       []reqStep
	}
	st := func(excess uint64, at int64) *reqState { return &reqState{excess: excess, last: t0 + at} }
	vecs := []vec{
		{"REQ-1", 2, 10, []reqStep{
			{key: "foo", op: "c"},
			{key: "foo", op: "c", delay: 0.5, state: 1},
			{key: "bar", op: "c"},
			{key: "bar", op: "c", delay: 0.5, state: 1},
		}},
		{"REQ-3", 2, 10, []reqStep{
			{key: "foo", op: "c"},
			{key: "foo", op: "c", delay: 0.5, state: 1},
			{key: "foo", op: "dry", delay: 1, state: 2},
			{key: "foo", op: "dry", delay: 1, state: 2, stored: st(1000, 0)},
		}},
		{"REQ-4", 40, 40, []reqStep{
			{key: "foo", op: "c"}, {key: "foo", op: "uncommit", stored: st(0, 0)},
			{key: "foo", op: "c", delay: 0.025, state: 1}, {key: "foo", op: "uncommit", stored: st(0, 0)},
			{key: "foo", op: "c", delay: 0.025, state: 1}, {key: "foo", op: "uncommit", stored: st(0, 0)},
			{key: "foo", op: "c", delay: 0.025, state: 1}, {key: "foo", op: "uncommit", stored: st(0, 0)},
			{key: "foo", op: "c", delay: 0.025, state: 1}, {key: "foo", op: "uncommit", stored: st(0, 0)},
		}},
		{"REQ-5", 2, 2, []reqStep{
			{at: 0, key: "foo", op: "c"},
			{at: 200, key: "foo", op: "c", delay: 0.3, state: 0.6},
			{at: 400, key: "foo", op: "c", delay: 0.6, state: 1.2},
			{at: 600, key: "foo", op: "c", delay: 0.9, state: 1.8},
			{at: 800, key: "foo", op: "c", rej: true, state: 2.4},
			{at: 1000, key: "foo", op: "c", delay: 1, state: 2},
			{at: 1200, key: "foo", op: "c", rej: true, state: 2.6},
			{at: 1400, key: "foo", op: "c", rej: true, state: 2.2},
			{at: 1600, key: "foo", op: "c", delay: 0.9, state: 1.8},
			{at: 1800, key: "foo", op: "c", rej: true, state: 2.4},
		}},
		{"REQ-6", 1, 0, []reqStep{
			{at: 0, key: "foo", op: "c"},
			{at: 500, key: "foo", op: "c", rej: true, state: 0.5},
			{at: 1000, key: "foo", op: "c"},
			{at: 1500, key: "foo", op: "c", rej: true, state: 0.5},
			{at: 2000, key: "foo", op: "c"},
		}},
	}
	// REQ-2: with burst b, ten calls at t0, the first rejection is call b+2.
	for burst := 0; burst <= 2; burst++ {
		var steps []reqStep
		for call := 1; call <= 10; call++ {
			excess := float64(call - 1)
			s := reqStep{key: "foo", op: "c", delay: excess / 2, state: excess}
			if call >= burst+2 {
				s = reqStep{key: "foo", op: "c", rej: true, state: float64(burst + 1)}
			}
			steps = append(steps, s)
		}
		vecs = append(vecs, vec{fmt.Sprintf("REQ-2/burst=%d", burst), 2, float64(burst), steps})
	}
	for _, v := range vecs {
		t.Run(v.id, func(t *testing.T) {
			d, clk := zonetest.Open(t, dict.Options{})
			l, err := NewReq(d, "t", v.rate, v.burst)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range v.steps {
				got := do(t, clk, l, s.call())
				if s.op != "uncommit" && (got.Allowed == s.rej || !near(got.Delay, secs(s.delay)) || !nearF(got.State, s.state)) {
					t.Errorf("step %d: %v = (allowed %v, delay %v, state %v), want (allowed %v, delay %v, state %v)",
						i+1, s.call(), got.Allowed, got.Delay, got.State, !s.rej, secs(s.delay), s.state)
				}
				if s.stored != nil {
					if got := storedReq(t, l, s.key); got != *s.stored {
						t.Errorf("step %d: stored %+v, want %+v", i+1, got, *s.stored)
					}
				}
			}
		})
	}
}

// storedReq reads a Req key's state from the dictionary.
func storedReq(t *testing.T, l *Req, key string) reqState {
	t.Helper()
	v, _, err := l.d.Get(zoneKey(l, key))
	if err != nil || v.Len() != reqSize {
		t.Fatalf("Get(%q) = %v %d bytes, %v", key, v.Kind(), v.Len(), err)
	}
	return getReq(v.Bytes())
}

func TestReqUncommitMissing(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	l, _ := NewReq(d, "t", 1, 1)
	if err := l.Uncommit(context.Background(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Uncommit(absent) = %v, want ErrNotFound", err)
	}
}

// TestReqResetAfter checks that ResetAfter is how long until the key is
// back to a fresh key's allowance: resty.limit.req allows a request when
// max(stored − leak + 1000, 0) ≤ burst, so a stored excess E is back to
// burst+1 requests at once only after (E+1000)/rate. A dry run then finds
// the State of a fresh key, 0, and a millisecond before it does not. A dry
// run's ResetAfter, like its Remaining, counts the request as a commit
// would.
func TestReqResetAfter(t *testing.T) {
	c := func(at int64) call { return call{at, "k", "c"} }
	tests := []struct {
		name        string
		rate, burst float64
		calls       []call
		rej         bool // the last call is rejected
		want        time.Duration
	}{
		{"first/burst=0", 1, 0, []call{c(0)}, false, time.Second},
		{"first/burst=9", 10, 9, []call{c(0)}, false, 100 * time.Millisecond},
		{"tenth/burst=9", 10, 9, []call{c(0), c(0), c(0), c(0), c(0), c(0), c(0), c(0), c(0), c(0)}, false, time.Second},
		{"dry/burst=1", 1, 1, []call{c(0), {200, "k", "dry"}}, false, 1800 * time.Millisecond},
		{"rejected/burst=0", 1, 0, []call{c(0), c(500)}, true, 500 * time.Millisecond},
		{"rejected/burst=2", 2, 2, []call{c(0), c(200), c(400), c(600), c(800)}, true, 1200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, clk := zonetest.Open(t, dict.Options{})
			l, err := NewReq(d, "t", tt.rate, tt.burst)
			if err != nil {
				t.Fatal(err)
			}
			var got Decision
			for _, c := range tt.calls {
				got = do(t, clk, l, c)
			}
			last := tt.calls[len(tt.calls)-1]
			if got.Allowed == tt.rej || got.ResetAfter != tt.want {
				t.Fatalf("%v = (allowed %v, ResetAfter %v), want (allowed %v, ResetAfter %v)",
					last, got.Allowed, got.ResetAfter, !tt.rej, tt.want)
			}
			if last.op == "dry" {
				return // nothing stored to drain
			}
			for _, s := range []struct {
				at    int64
				fresh bool
			}{{last.at + tt.want.Milliseconds() - 1, false}, {last.at + tt.want.Milliseconds(), true}} {
				dry := do(t, clk, l, call{s.at, "k", "dry"})
				if (dry.State == 0) != s.fresh {
					t.Errorf("%v = (State %v, Remaining %d), want fresh %v (State 0)",
						call{s.at, "k", "dry"}, dry.State, dry.Remaining, s.fresh)
				}
			}
		})
	}
}
