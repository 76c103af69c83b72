package limiter

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// TestModel runs random decisions, on a few keys, at random times, through
// every limiter and through a model of its spec in plain Go maps: the
// decisions must agree. It checks what the vectors cannot: state that
// expires, windows that roll, keys that interleave. The seed comes from
// testutil.Seed: a failing run prints the command that replays it.
func TestModel(t *testing.T) {
	r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	d, clk := zonetest.Open(t, dict.Options{})
	ctx := context.Background()
	req, _ := NewReq(d, "t", 3, 2)
	count, _ := NewCount(d, "t", 4, 900*time.Millisecond)
	conn, _ := NewConn(d, "t", 2, 2, time.Second)
	gcra, _ := NewGCRA(d, "t", 3, 4) // T = 333,333,333 ns: TATs off the ms grid
	sw, _ := NewSlidingWindow(d, "t", 5, 700*time.Millisecond)
	m := newModel()
	now := int64(0)
	for i := range 20000 {
		now += int64(r.IntN(400))
		clk.SetMilli(now)
		ms := t0 + now
		key := []string{"a", "b", "c"}[r.IntN(3)]
		commit := r.IntN(4) > 0
		var got, want Decision
		var err error
		op := []string{"req", "count", "conn", "conn-leave", "gcra", "sliding"}[r.IntN(6)]
		switch op {
		case "req":
			// Now and then a decision stamped earlier than the last, as
			// from a process whose clock lags (by far more here than the
			// millisecond or two of a coarse clock, so that it often
			// falls before the key's last decision).
			lag := int64(0)
			if r.IntN(4) == 0 {
				lag = int64(r.IntN(600))
				clk.SetMilli(now - lag)
			}
			got, err = req.Incoming(ctx, "req:"+key, commit)
			want = m.req(req, key, ms-lag, commit)
			clk.SetMilli(now)
		case "count":
			got, err = count.Incoming(ctx, "count:"+key, commit)
			want = m.count(key, ms, commit)
		case "conn":
			got, err = conn.Incoming(ctx, "conn:"+key, commit)
			want = m.conn(key, commit)
		case "conn-leave":
			if m.conns[key] == 0 {
				continue
			}
			var n int64
			n, err = conn.Leaving(ctx, "conn:"+key, 0)
			m.conns[key]--
			got, want = Decision{State: float64(n)}, Decision{State: float64(m.conns[key])}
		case "gcra":
			got, err = gcra.Incoming(ctx, "gcra:"+key, commit)
			want = m.gcra(gcra, key, ms, commit)
		case "sliding":
			got, err = sw.Incoming(ctx, "sw:"+key, commit)
			want = m.sliding(sw, key, ms, commit)
		}
		if err != nil {
			t.Fatalf("op %d: %s(%q) at +%d: %v", i, op, key, now, err)
		}
		if got.Allowed != want.Allowed || got.State != want.State || got.Remaining != want.Remaining || got.Delay != want.Delay {
			t.Fatalf("op %d: %s(%q, commit %v) at +%d = %+v, model %+v", i, op, key, commit, now, got, want)
		}
	}
}

// model is the limiters' spec over maps, without the dictionary.
type model struct {
	reqs   map[string]reqState
	counts map[string][2]int64 // remaining, expiry ms
	conns  map[string]int64
	tats   map[string]int64 // ns
	sws    map[string]swState
}

func newModel() *model {
	return &model{map[string]reqState{}, map[string][2]int64{}, map[string]int64{}, map[string]int64{}, map[string]swState{}}
}

func (m *model) req(r *Req, key string, now int64, commit bool) Decision {
	l := r.tune.nums()
	s, found := m.reqs[key]
	excess := 0.0
	if found {
		elapsed := max(now-s.last, 0) // an earlier stamp leaks nothing
		excess = max(float64(s.excess)-l.rateM*float64(elapsed)/1000+1000, 0)
	}
	ok := excess <= l.burstM
	if ok && commit {
		m.reqs[key] = reqState{excess: uint64(excess), last: max(now, s.last)}
	}
	var dec Decision
	l.decide(&dec, excess, 1, ok, commit) // the Decision's form, from the excess
	return dec
}

func (m *model) count(key string, now int64, commit bool) Decision {
	const limit, window = 4, 900
	c, found := m.counts[key]
	if !found || now >= c[1] {
		c, found = [2]int64{limit, now + window}, false
	}
	rem := c[0] - 1
	if commit {
		m.counts[key] = [2]int64{rem, c[1]}
	}
	if rem < 0 {
		return Decision{State: float64(rem)}
	}
	return Decision{Allowed: true, State: float64(rem), Remaining: rem}
}

func (m *model) conn(key string, commit bool) Decision {
	const max, limit = 2, 4
	n := m.conns[key] + 1
	if n > limit {
		return Decision{State: float64(n)}
	}
	if commit {
		m.conns[key] = n
	}
	d := Decision{Allowed: true, State: float64(n), Remaining: limit - n}
	if n > max {
		d.Delay = time.Second * time.Duration((n-1)/max)
	}
	return d
}

func (m *model) gcra(g *GCRA, key string, now int64, commit bool) Decision {
	l := g.tune.nums()
	nowNs := now * int64(time.Millisecond)
	tat := max(m.tats[key], nowNs)
	newTat := tat + l.t
	if nowNs < newTat-l.tau {
		return Decision{}
	}
	if commit {
		m.tats[key] = newTat
	}
	rem := (nowNs - (newTat - l.tau)) / l.t
	return Decision{Allowed: true, State: float64(rem), Remaining: rem}
}

func (m *model) sliding(l *SlidingWindow, key string, now int64, commit bool) Decision {
	const limit = 5
	w := l.tune.nums().w
	win := now / w
	s := m.sws[key]
	switch {
	case s.window == win-1:
		s = swState{window: win, prev: s.cur}
	case s.window != win:
		s = swState{window: win}
	}
	elapsed := now - win*w
	left := limit*w - s.prev*(w-elapsed) - (s.cur+1)*w
	if left < 0 {
		return Decision{State: float64(left) / float64(w)}
	}
	if commit {
		s.cur++
		m.sws[key] = s
	}
	return Decision{Allowed: true, State: float64(left) / float64(w), Remaining: left / w}
}
