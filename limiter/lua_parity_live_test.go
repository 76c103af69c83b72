package limiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// TestLuaParityReqSetters replays random sequences on one Req whose rate
// and burst change between calls, as set_rate and set_burst change
// resty.limit.req's. One limiter serves every sequence: a sequence starts
// with its numbers set live. The model is the Lua module with the
// package's documented differences (monotonic): a record expires when it
// drained at the rate of its last write, or at a rate lowered since.
func TestLuaParityReqSetters(t *testing.T) {
	r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	d, clk := zonetest.Open(t, dict.Options{})
	ctx := context.Background()
	l, err := NewReq(d, "t", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for seq := range 200 {
		rate, burst := parityRate(r), parityBurst(r)
		if err := l.SetRate(rate); err != nil {
			t.Fatal(err)
		}
		if err := l.SetBurst(burst); err != nil {
			t.Fatal(err)
		}
		lua := newLuaReq(rate, burst, true)
		now := parityEpoch(r)
		for i := range 40 {
			now += parityGap(r, rate)
			clk.SetMilli(now - t0)
			key := fmt.Sprintf("req:%d:%c", seq, 'a'+r.IntN(2))
			what := fmt.Sprintf("seq %d (rate %v, burst %v) call %d at %d ms", seq, rate, burst, i, now)
			switch op := r.IntN(12); {
			case op == 0:
				rate = parityRate(r)
				if err := l.SetRate(rate); err != nil {
					t.Fatalf("%s: SetRate(%v) = %v", what, rate, err)
				}
				lua.setRate(rate, now)
			case op == 1:
				burst = parityBurst(r)
				if err := l.SetBurst(burst); err != nil {
					t.Fatalf("%s: SetBurst(%v) = %v", what, burst, err)
				}
				lua.burst = burst * 1000
			case op == 2:
				err := l.Uncommit(ctx, key)
				found := lua.uncommit(key, now)
				if (err != nil && !errors.Is(err, ErrNotFound)) || found != (err == nil) {
					t.Fatalf("%s: Uncommit(%q) = %v, Lua found %v", what, key, err, found)
				}
			default:
				commit := op > 4
				got, err := l.Incoming(ctx, key, commit)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				delay, excess, rej := lua.incoming(key, commit, now)
				if got.Allowed == rej || got.State != excess || (!rej && got.Delay != luaDelay(delay)) {
					t.Fatalf("%s: Incoming(%q, %v) = allowed %v state %v delay %v; Lua: rejected %v excess %v delay %v",
						what, key, commit, got.Allowed, got.State, got.Delay, rej, excess, luaDelay(delay))
				}
			}
			want, wantFound := lua.lookup(key, now)
			v, _, err := d.Get(zoneKey(l, key))
			if err != nil && !errors.Is(err, dict.ErrNotFound) {
				t.Fatal(err)
			}
			if found := err == nil; found != wantFound || (found && getReq(v.Bytes()) != want) {
				t.Fatalf("%s: stored %v (found %v); Lua stores %+v (found %v)", what, v, found, want, wantFound)
			}
		}
	}
}

// TestLuaParityReqSetBurst is resty.limit.req's t/req.t TEST 3 on one
// limiter: set_burst(0, 1, 2) between flushes; the request after burst+1
// at one time is rejected.
func TestLuaParityReqSetBurst(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	l, err := NewReq(d, "store", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for burst := range 3 {
		if err := d.FlushAll(); err != nil {
			t.Fatal(err)
		}
		if burst > 0 {
			if err := l.SetBurst(float64(burst)); err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i <= 10; i++ {
			dec, err := l.Incoming(context.Background(), "foo", true)
			if err != nil {
				t.Fatal(err)
			}
			if !dec.Allowed {
				got = append(got, fmt.Sprintf("%d: error: rejected", i))
				break
			}
		}
	}
	want := []string{"2: error: rejected", "3: error: rejected", "4: error: rejected"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rejections = %q, want %q", got, want)
	}
}

// TestLuaParityConnSetters replays random sequences on one Conn whose max
// and burst change between calls, as set_conn and set_burst change
// resty.limit.conn's.
func TestLuaParityConnSetters(t *testing.T) {
	r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	d, _ := zonetest.Open(t, dict.Options{})
	ctx := context.Background()
	const unit = 100 * time.Millisecond
	l, err := NewConn(d, "t", 1, 0, unit)
	if err != nil {
		t.Fatal(err)
	}
	for seq := range 100 {
		max, burst := int64(1+r.IntN(4)), int64(r.IntN(4))
		if err := l.SetConn(max); err != nil {
			t.Fatal(err)
		}
		if err := l.SetBurst(burst); err != nil {
			t.Fatal(err)
		}
		lua := &luaConn{max: float64(max), burst: float64(burst), unit: int64(unit), sh: newShdict()}
		for i := range 40 {
			key := fmt.Sprintf("conn:%d:%c", seq, 'a'+r.IntN(2))
			what := fmt.Sprintf("seq %d (max %d, burst %d) call %d", seq, max, burst, i)
			switch op := r.IntN(12); {
			case op == 0:
				max = int64(1 + r.IntN(4))
				if err := l.SetConn(max); err != nil {
					t.Fatal(err)
				}
				lua.max = float64(max)
			case op == 1:
				burst = int64(r.IntN(4))
				if err := l.SetBurst(burst); err != nil {
					t.Fatal(err)
				}
				lua.burst = float64(burst)
			case op < 5:
				n, err := l.Leaving(ctx, key, 0)
				conn, ok := lua.sh.incr(key, -1, nil, 0, 0)
				if ok != (err == nil) || (ok && n != int64(conn)) {
					t.Fatalf("%s: Leaving(%q) = %d, %v; Lua: %v (found %v)", what, key, n, err, conn, ok)
				}
			default:
				commit := op > 6
				got, err := l.Incoming(ctx, key, commit)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				conn, delay, rej := lua.incoming(key, commit, 0)
				wantRem := int64(0)
				if !rej {
					wantRem = int64(math.Floor(float64(max+burst) - conn))
				}
				if got.Allowed == rej || got.State != conn || got.Delay != delay || got.Remaining != wantRem {
					t.Fatalf("%s: Incoming(%q, %v) = allowed %v state %v delay %v remaining %d; Lua: rejected %v conn %v delay %v",
						what, key, commit, got.Allowed, got.State, got.Delay, got.Remaining, rej, conn, delay)
				}
			}
			want, wantFound := lua.sh.get(key, 0)
			have, found := storedNum(t, d, zoneKey(l, key))
			if found != wantFound || math.Float64bits(have) != math.Float64bits(want) {
				t.Fatalf("%s: stored %v (found %v); Lua stores %v (found %v)", what, have, found, want, wantFound)
			}
		}
	}
}
