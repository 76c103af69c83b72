package limiter

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/shm"
)

// TestLiveSetters: each setter changes the Policy of its limiter, live
// numbers survive another construction's, and UnsetLive brings back the
// newest construction's numbers.
func TestLiveSetters(t *testing.T) {
	type policer interface {
		Limiter
		Policy() Policy
		UnsetLive() error
	}
	tests := []struct {
		name  string
		kind  string
		build func(d *dict.Dict) (policer, error)
		set   func(l policer) error
		other record // another process's construction
		setP  Policy // with the live numbers over the built ones
		want  Policy // with the live numbers over other's
		after Policy // once unset: other's
	}{
		{"req rate", kindReq,
			func(d *dict.Dict) (policer, error) { return NewReq(d, "x", 10, 4) },
			func(l policer) error { return l.(*Req).SetRate(1) },
			record{Rate: 10, Burst: 9}, Policy{Limit: 5, Window: 5 * time.Second}, Policy{Limit: 10, Window: 10 * time.Second}, Policy{Limit: 10, Window: time.Second}},
		{"req burst", kindReq,
			func(d *dict.Dict) (policer, error) { return NewReq(d, "x", 10, 4) },
			func(l policer) error { return l.(*Req).SetBurst(19) },
			record{Rate: 5, Burst: 0}, Policy{Limit: 20, Window: 2 * time.Second}, Policy{Limit: 20, Window: 4 * time.Second}, Policy{Limit: 1, Window: time.Second}},
		{"count limit", kindCount,
			func(d *dict.Dict) (policer, error) { return NewCount(d, "x", 2, time.Minute) },
			func(l policer) error { return l.(*Count).SetLimit(1000) },
			record{Limit: 3, WindowNs: int64(time.Hour)}, Policy{Limit: 1000, Window: time.Minute}, Policy{Limit: 1000, Window: time.Hour}, Policy{Limit: 3, Window: time.Hour}},
		{"count window", kindCount,
			func(d *dict.Dict) (policer, error) { return NewCount(d, "x", 2, time.Minute) },
			func(l policer) error { return l.(*Count).SetWindow(time.Second) },
			record{Limit: 3, WindowNs: int64(time.Hour)}, Policy{Limit: 2, Window: time.Second}, Policy{Limit: 3, Window: time.Second}, Policy{Limit: 3, Window: time.Hour}},
		{"sliding limit", kindSW,
			func(d *dict.Dict) (policer, error) { return NewSlidingWindow(d, "x", 2, time.Minute) },
			func(l policer) error { return l.(*SlidingWindow).SetLimit(7) },
			record{Limit: 3, WindowNs: int64(time.Minute)}, Policy{Limit: 7, Window: time.Minute}, Policy{Limit: 7, Window: time.Minute}, Policy{Limit: 3, Window: time.Minute}},
		{"gcra rate", kindGCRA,
			func(d *dict.Dict) (policer, error) { return NewGCRA(d, "x", 1, 2) },
			func(l policer) error { return l.(*GCRA).SetRate(2) },
			record{Rate: 1, Burst: 4}, Policy{Limit: 2, Window: time.Second}, Policy{Limit: 4, Window: 2 * time.Second}, Policy{Limit: 4, Window: 4 * time.Second}},
		{"gcra burst", kindGCRA,
			func(d *dict.Dict) (policer, error) { return NewGCRA(d, "x", 1, 2) },
			func(l policer) error { return l.(*GCRA).SetBurst(6) },
			record{Rate: 2, Burst: 2}, Policy{Limit: 6, Window: 6 * time.Second}, Policy{Limit: 6, Window: 3 * time.Second}, Policy{Limit: 2, Window: time.Second}},
		{"conn max", kindConn,
			func(d *dict.Dict) (policer, error) { return NewConn(d, "x", 2, 1, 0) },
			func(l policer) error { return l.(*Conn).SetConn(5) },
			record{Limit: 3, Burst: 3}, Policy{Limit: 6}, Policy{Limit: 8}, Policy{Limit: 6}},
		{"conn burst", kindConn,
			func(d *dict.Dict) (policer, error) { return NewConn(d, "x", 2, 1, 0) },
			func(l policer) error { return l.(*Conn).SetBurst(0) },
			record{Limit: 3, Burst: 3}, Policy{Limit: 2}, Policy{Limit: 3}, Policy{Limit: 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := zonetest.Open(t, dict.Options{})
			l, err := tt.build(d)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.set(l); err != nil {
				t.Fatalf("set = %v", err)
			}
			if got := l.Policy(); got != tt.setP {
				t.Errorf("Policy() after set = %+v, want %+v", got, tt.setP)
			}
			applyOnce(d, tt.kind, "x", &tt.other, 0) // another process builds it anew
			if got := l.Policy(); got != tt.want {
				t.Errorf("Policy() after a construction = %+v, want the live %+v", got, tt.want)
			}
			if err := l.UnsetLive(); err != nil {
				t.Fatalf("UnsetLive() = %v", err)
			}
			if got := l.Policy(); got != tt.after {
				t.Errorf("Policy() after UnsetLive = %+v, want the newest construction's %+v", got, tt.after)
			}
		})
	}
}

// TestLiveSettersRefuse: a setter refuses what the constructor refuses,
// and changes nothing then.
func TestLiveSettersRefuse(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	r, _ := NewReq(d, "r", 10, 4)
	c, _ := NewCount(d, "c", 2, time.Minute)
	g, _ := NewGCRA(d, "g", 1, 2)
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"Req.SetRate(0)", r.SetRate(0), ErrBadRate},
		{"Req.SetBurst(-1)", r.SetBurst(-1), ErrBadBurst},
		{"Count.SetLimit(0)", c.SetLimit(0), ErrBadLimit},
		{"Count.SetWindow(0)", c.SetWindow(0), ErrBadWindow},
		{"GCRA.SetBurst(0)", g.SetBurst(0), ErrBadBurst},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s = %v, want %v", tt.name, tt.err, tt.want)
		}
	}
	if recs, _ := d.Records(); len(recs) != 0 {
		t.Errorf("registry holds %d records after refused settings, want 0", len(recs))
	}
	ro, err := dict.Open(d.Path(), dict.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := SetLive(ro, kindReq, "r", Numbers{Rate: 1}, FieldRate); !errors.Is(err, dict.ErrReadOnly) {
		t.Errorf("SetLive on a read-only view = %v, want ErrReadOnly", err)
	}
}

// TestLiveCountAppliesNow: a Count's limit raised from 2 to 1,000 admits
// the next request of a window that counted 2; lowered to 5, the window
// rejects once it has counted 5.
func TestLiveCountAppliesNow(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	l, err := NewCount(d, "c", 2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	step := func(what string, want bool) {
		t.Helper()
		dec, err := l.Incoming(ctx, "k", true)
		if err != nil || dec.Allowed != want {
			t.Fatalf("%s: Incoming = %+v, %v, want Allowed %v", what, dec, err, want)
		}
	}
	step("1st of 2", true)
	step("2nd of 2", true)
	step("3rd of 2", false) // counted: the window has 3
	if err := l.SetLimit(1000); err != nil {
		t.Fatal(err)
	}
	step("4th of 1000", true)
	if err := l.SetLimit(5); err != nil {
		t.Fatal(err)
	}
	step("5th of 5", true)
	step("6th of 5", false)
	if err := l.UnsetLive(); err != nil { // back to 2
		t.Fatal(err)
	}
	if dec, _ := l.Incoming(ctx, "k", false); dec.Allowed || dec.State != 2-7 {
		t.Errorf("dry run after unset = %+v, want rejected with State -5 (2 less the 7 counted)", dec)
	}
	if dec, _ := l.Incoming(ctx, "new", true); !dec.Allowed || dec.Remaining != 1 {
		t.Errorf("a new key after unset = %+v, want allowed with 1 left of 2", dec)
	}
}

// TestLiveReqAppliesNow: a Req's burst raised admits the next request of a
// full bucket; its rate lowered delays the next.
func TestLiveReqAppliesNow(t *testing.T) {
	d, clk := zonetest.Open(t, dict.Options{})
	clk.SetMilli(0)
	l, err := NewReq(d, "r", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if dec, _ := l.Incoming(ctx, "k", true); !dec.Allowed {
		t.Fatalf("first request = %+v, want allowed", dec)
	}
	if dec, _ := l.Incoming(ctx, "k", true); dec.Allowed {
		t.Fatalf("second request with burst 0 = %+v, want rejected", dec)
	}
	if err := l.SetBurst(3); err != nil {
		t.Fatal(err)
	}
	dec, _ := l.Incoming(ctx, "k", true)
	if !dec.Allowed || dec.Delay != 100*time.Millisecond {
		t.Errorf("after SetBurst(3) = %+v, want allowed with a delay of 100ms", dec)
	}
	if err := l.SetRate(1); err != nil {
		t.Fatal(err)
	}
	dec, _ = l.Incoming(ctx, "k", true)
	if !dec.Allowed || dec.Delay != 2*time.Second {
		t.Errorf("after SetRate(1) = %+v, want allowed with a delay of 2s", dec)
	}
}

// TestLiveSurvivesFloodAndRestart: live numbers stay through a flood of
// new keys that evicts the construction's record, and through every
// process closing the zone.
func TestLiveSurvivesFloodAndRestart(t *testing.T) {
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewCount(d, "c", 2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetLimit(50); err != nil {
		t.Fatal(err)
	}
	for i := range 20000 {
		if _, err := d.Set(fmt.Sprintf("flood|%d", i), dict.Int(int64(i)), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if st := d.Stats(); st.Evictions == 0 {
		t.Fatalf("the flood evicted nothing")
	}
	if got := l.Policy().Limit; got != 50 {
		t.Errorf("Policy().Limit after a flood = %d, want the live 50", got)
	}
	l = nil
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2, _ := zonetest.OpenAt(t, path, dict.Options{Size: 256 << 10})
	l2, err := NewCount(d2, "c", 2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := l2.Policy().Limit; got != 50 {
		t.Errorf("Policy().Limit of a limiter built after a restart = %d, want the live 50", got)
	}
	ss, err := Settings(d2)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].InForce.Limit != 50 || ss[0].Built.Limit != 2 || ss[0].LiveFields != FieldLimit {
		t.Errorf("Settings() = %+v, want count c in force 50, built 2, live limit", ss)
	}
}

// TestLiveRegistryFull: live numbers for more limiters than the registry
// holds are refused with shm.ErrRegistryFull.
func TestLiveRegistryFull(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	for i := range shm.RegSlots {
		if err := SetLive(d, kindCount, fmt.Sprint(i), Numbers{Limit: 5}, FieldLimit); err != nil {
			t.Fatalf("SetLive #%d = %v", i, err)
		}
	}
	err := SetLive(d, kindCount, "one-more", Numbers{Limit: 5}, FieldLimit)
	if !errors.Is(err, shm.ErrRegistryFull) {
		t.Errorf("SetLive past the registry = %v, want ErrRegistryFull", err)
	}
	if ok, err := UnsetLive(d, kindCount, "0"); !ok || err != nil {
		t.Errorf("UnsetLive = %v, %v, want true, nil", ok, err)
	}
	if err := SetLive(d, kindCount, "one-more", Numbers{Limit: 5}, FieldLimit); err != nil {
		t.Errorf("SetLive after an unset = %v, want nil", err)
	}
}

// TestLiveChangesWhileDeciding: goroutines decide while another sets and
// unsets numbers; the race detector watches the cached numbers, and every
// decision succeeds.
func TestLiveChangesWhileDeciding(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	l, err := NewReq(d, "r", 100, 5)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for w := range 4 {
		go func() {
			ctx := context.Background()
			for i := 0; ; i++ {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				if _, err := l.Incoming(ctx, fmt.Sprint("k", w, i%10), true); err != nil {
					errs <- err
					return
				}
				l.Policy()
			}
		}()
	}
	for i := range 201 { // ends with an unset
		var err error
		switch i % 3 {
		case 0:
			err = l.SetRate(float64(1 + i))
		case 1:
			err = l.SetBurst(float64(i % 7))
		default:
			err = l.UnsetLive()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("Incoming while numbers change: %v", err)
		}
	}
	if got, want := l.Policy(), (Policy{Limit: 6, Window: time.Second}); got != want {
		t.Errorf("Policy() after the last unset = %+v, want the built %+v", got, want)
	}
}

// TestLiveReqRateLoweredKeepsState: a full bucket's state outlives its TTL
// at the old rate once the rate is lowered. It leaks at the new rate, as
// the Lua module's record does. A lower rate admits what it allows, not a
// new bucket's burst.
func TestLiveReqRateLoweredKeepsState(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		lower func(t *testing.T, d *dict.Dict, l *Req) *Req
	}{
		{"SetRate", func(t *testing.T, _ *dict.Dict, l *Req) *Req {
			if err := l.SetRate(5); err != nil {
				t.Fatal(err)
			}
			return l
		}},
		{"SetLive", func(t *testing.T, d *dict.Dict, l *Req) *Req {
			if err := SetLive(d, "req", "r", Numbers{Rate: 5}, FieldRate); err != nil {
				t.Fatal(err)
			}
			return l
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, clk := zonetest.Open(t, dict.Options{})
			l, err := NewReq(d, "r", 20, 19)
			if err != nil {
				t.Fatal(err)
			}
			admitted := func() (n int) {
				t.Helper()
				for range 40 {
					dec, err := l.Incoming(ctx, "k", true)
					if err != nil {
						t.Fatal(err)
					}
					if dec.Allowed {
						n++
					}
				}
				return n
			}
			if n := admitted(); n != 20 {
				t.Fatalf("a new bucket at 20 r/s, burst 19 admitted %d, want 20", n)
			}
			l = tc.lower(t, d, l)
			// The state at 20 r/s expired 1001ms after its last write.
			clk.Advance(1200 * time.Millisecond)
			if n := admitted(); n != 6 {
				t.Errorf("1.2s after the rate went to 5 r/s: admitted %d, want 6", n)
			}
		})
	}
}

// TestLiveReqUnsetLowersRate: live numbers unset lower a Req's rate to the
// construction's, and a full bucket's state lasts as long as it drains at
// that rate.
func TestLiveReqUnsetLowersRate(t *testing.T) {
	ctx := context.Background()
	d, clk := zonetest.Open(t, dict.Options{})
	l, err := NewReq(d, "r", 20, 19)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetRate(50); err != nil {
		t.Fatal(err)
	}
	admitted := func() (n int) {
		t.Helper()
		for range 40 {
			dec, err := l.Incoming(ctx, "k", true)
			if err != nil {
				t.Fatal(err)
			}
			if dec.Allowed {
				n++
			}
		}
		return n
	}
	if n := admitted(); n != 20 {
		t.Fatalf("a new bucket at 50 r/s, burst 19 admitted %d, want 20", n)
	}
	if err := l.UnsetLive(); err != nil {
		t.Fatal(err)
	}
	// The state at 50 r/s expired 401ms after its last write.
	clk.Advance(600 * time.Millisecond)
	if n := admitted(); n != 12 {
		t.Errorf("600ms after the rate went back to 20 r/s: admitted %d, want 12", n)
	}
}
